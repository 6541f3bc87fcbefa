package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/procbench"
)

// Package initialisation runs in every koshactl process, whatever the
// command: what a package builds at init (expressions, templates, tables, a
// corpus) koshactl version paid for. The allocations GODEBUG=inittrace=1
// counts are deterministic, so this bounds them, never a time:
//
//   - each of koshactl's own packages allocates at most ownMaxBytes and
//     ownMaxAllocs (before: drill 175 KB, sandbox 134 KB, gameday 120 KB,
//     config 59 KB, breaker 44 KB); build such things on first use
//     (internal/lazyre, sync.OnceValue);
//   - none of the packages only koshactl-full links is initialized
//     (heavyInit: gojq, the MCP SDK and its encoding/gob and jsonschema,
//     SQLite's libc, the terminal UI and its clipboard), so no command the
//     front runs (version, breaker get, chaos sign) pays for them;
//   - all packages together, dependencies included, allocate at most
//     totalMaxBytes (2.37 MB in 192 packages today; 2.92 MB in 232 while
//     koshactl was one program, of which the MCP SDK's encoding/gob and
//     jsonschema were 215 KB; 2.87 MB while client_golang was linked,
//     3.1 MB before the start-up work): all of it is in the heap
//     before a command's first line runs, and every command whose work takes
//     the heap past the first collection's trigger (8 MiB with startHeap)
//     pays for a collection.
//     Dependencies' own init (AWS SDK schemas and endpoint tables,
//     gojq) is most of it; a new dependency with a heavy init shows here;
//   - no garbage collection starts while koshactl version runs: what is
//     allocated before internal/startheap sets the first collection at 8 MiB
//     must stay under the runtime's own first trigger (about 3 MiB).
func TestPackageInitStaysLight(t *testing.T) {
	const (
		ownMaxBytes   = 8 << 10
		ownMaxAllocs  = 64
		totalMaxBytes = 24 << 20 / 10 // 2.4 MiB: another heavy dependency crosses it
	)
	// Built as the release builds it (a -race test binary's allocations differ).
	bin := procbench.Build(t, "github.com/kosha-platform/koshactl/cmd/koshactl")
	cmd := exec.CommandContext(t.Context(), bin, "version") //nolint:gosec // G204: the binary this test built
	// gcpacertrace prints a "pacer:" line when a collection starts.
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1,gcpacertrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "koshactl ") {
		t.Fatalf("koshactl version: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	for line := range strings.Lines(stderr.String()) {
		if strings.HasPrefix(line, "pacer:") {
			t.Errorf("a garbage collection started during koshactl version (%s): the heap reached the runtime's "+
				"first trigger before internal/startheap raised it; the packages whose init ran before it:\n%s",
				strings.TrimSpace(line), largest(initialisedBefore(parseInitTrace(t, stderr.String()), startHeapPkg), 10))
		}
	}
	inits := parseInitTrace(t, stderr.String())
	if len(inits) < 100 {
		t.Fatalf("inittrace listed %d packages; GODEBUG=inittrace=1 output:\n%s", len(inits), stderr.String())
	}
	var total int
	own := 0
	for _, in := range inits {
		for _, heavy := range heavyInit {
			if in.pkg == heavy || strings.HasPrefix(in.pkg, heavy+"/") {
				t.Errorf("koshactl version initializes %s (%d bytes, %d allocs at init), which only koshactl-full links: "+
					"reach it from internal/cmd/factory (the full program's wiring), not from a package the front imports", in.pkg, in.bytes, in.allocs)
			}
		}
		total += in.bytes
		if !strings.HasPrefix(in.pkg, "github.com/kosha-platform/koshactl/") {
			continue
		}
		own++
		if in.bytes > ownMaxBytes || in.allocs > ownMaxAllocs {
			t.Errorf("%s allocates %d bytes in %d allocations at init (at most %d bytes, %d allocations): "+
				"build what it needs on first use", in.pkg, in.bytes, in.allocs, ownMaxBytes, ownMaxAllocs)
		}
	}
	if own == 0 {
		t.Errorf("no koshactl package in the trace:\n%s", stderr.String())
	}
	t.Logf("%d packages, %d of them koshactl's, allocate %d bytes at init", len(inits), own, total)
	if total > totalMaxBytes {
		t.Errorf("package initialisation allocates %d bytes in all (at most %d); the largest:\n%s", total, totalMaxBytes, largest(inits, 10))
	}
}

const startHeapPkg = "github.com/kosha-platform/koshactl/internal/startheap"

// heavyInit are the packages (and their sub-packages) whose initialisation
// only koshactl-full pays for: measured with GODEBUG=inittrace=1 and perf
// on koshactl version before the split (docs/benchmarks/startup.md).
var heavyInit = []string{
	"github.com/itchyny/gojq", "encoding/gob", "github.com/modelcontextprotocol/go-sdk", "github.com/google/jsonschema-go",
	"github.com/segmentio", "modernc.org", "github.com/atotto/clipboard", "charm.land", "github.com/charmbracelet",
	"github.com/kosha-platform/koshactl/internal/tui", "github.com/kosha-platform/koshactl/internal/dataplane",
	"github.com/kosha-platform/koshactl/internal/mcpserver", "github.com/kosha-platform/koshactl/internal/store/sqlite",
}

// initialisedBefore is the packages of the trace set up before pkg.
func initialisedBefore(inits []packageInit, pkg string) []packageInit {
	for i, in := range inits {
		if in.pkg == pkg {
			return inits[:i]
		}
	}
	return inits
}

// packageInit is one line of GODEBUG=inittrace=1.
type packageInit struct {
	pkg           string
	bytes, allocs int
}

func parseInitTrace(t *testing.T, trace string) []packageInit {
	t.Helper()
	// Compiled here: at package level it would count against package main.
	initLine := regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
	var inits []packageInit
	for line := range strings.Lines(trace) {
		m := initLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		b, err1 := strconv.Atoi(m[2])
		a, err2 := strconv.Atoi(m[3])
		if err1 != nil || err2 != nil {
			t.Fatalf("inittrace line %q", line)
		}
		inits = append(inits, packageInit{pkg: m[1], bytes: b, allocs: a})
	}
	return inits
}

func largest(inits []packageInit, n int) string {
	s := slices.SortedFunc(slices.Values(inits), func(a, b packageInit) int { return b.bytes - a.bytes })
	var b strings.Builder
	for _, in := range s[:min(n, len(s))] {
		fmt.Fprintf(&b, "  %s: %d bytes, %d allocs\n", in.pkg, in.bytes, in.allocs)
	}
	return b.String()
}
