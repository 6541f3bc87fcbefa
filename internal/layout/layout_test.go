package layout_test

import (
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kosha-platform/koshactl/"

// dataPlane are the reference data plane's packages (and everything below
// them).
var dataPlane = []string{
	module + "internal/dataplane",
}

// hosts run the sandbox fleet, or contain the command that does: the full
// program and its wiring (koshactl's front hands the sandbox to it).
var hosts = []string{
	module + "cmd/koshactl-full",
	module + "internal/cmd/factory",
	module + "internal/cmd/sandbox",
	module + "internal/testutil/clitest",
	module + "internal/testutil/sandboxtest",
	module + "tools/gendocs",
}

// dataPlaneMayImport are the control-plane packages the data plane builds
// on: the contracts both planes share (the override, the bucket, the gauge,
// the chaos header, the freeze, the item store, the audit record) and small utilities
// that hold no rule of the control plane.
var dataPlaneMayImport = []string{
	"internal/audit",     // contract: the audit record the sandbox appends
	"internal/breaker",   // contract: the override item and its rule
	"internal/chaos",     // contract: the chaos header and its verification
	"internal/freeze",    // contract: the fleet's freeze item and its rule on chaos headers
	"internal/gauge",     // contract: the gauge's values and names
	"internal/ratelimit", // contract: the bucket item and refill math
	"internal/store",     // contract: the item store
	"internal/build",     // utility: the version stamp
	"internal/clock",     // utility: the time source
	"internal/exitcode",  // utility: the kinds its errors are of
	"internal/config",    // utility: the duration rule of files
	"internal/fsutil",    // utility: regular files only
	"internal/lazyre",    // utility: expressions compiled on first use
}

// goos are the systems the release builds for; a file behind a build tag
// counts on the system it builds on.
var goos = []string{"linux", "darwin", "windows"}

func under(pkg string, roots []string) bool {
	for _, r := range roots {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}

// list runs the go command of this toolchain for one GOOS and returns each
// package's direct imports (imports) and all its dependencies (deps).
func list(t *testing.T, system string) (imports, deps map[string][]string) {
	t.Helper()
	gobin := filepath.Join(build.Default.GOROOT, "bin", "go")
	cmd := exec.CommandContext(t.Context(), gobin, "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, module+"...") //nolint:gosec // G204: the go command of this toolchain
	cmd.Env = append(os.Environ(), "GOOS="+system, "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list (GOOS=%s): %v", system, err)
	}
	imports, deps = map[string][]string{}, map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 3)
		imports[f[0]], deps[f[0]] = strings.Fields(f[1]), strings.Fields(f[2])
	}
	return imports, deps
}

// TestControlPlaneNeverImportsTheDataPlane lists every package's
// dependencies (tests excluded) with the go command, for every system the
// release builds, and fails on a control-plane package that reaches a
// data-plane one. Tests may: a control-plane test can run the reference data
// plane against what an operator command wrote.
func TestControlPlaneNeverImportsTheDataPlane(t *testing.T) {
	for _, system := range goos {
		_, deps := list(t, system)
		checked := 0
		found := map[string]bool{}
		for pkg, ds := range deps {
			if under(pkg, dataPlane) {
				found[strings.TrimPrefix(pkg, module)] = true
			}
			if under(pkg, dataPlane) || under(pkg, hosts) {
				continue
			}
			checked++
			for _, d := range ds {
				if under(d, dataPlane) {
					t.Errorf("GOOS=%s: %s imports the data plane's %s: move the shared part into a contract package both import", system, strings.TrimPrefix(pkg, module), strings.TrimPrefix(d, module))
				}
			}
		}
		// The reference data plane's packages all sit in its tree.
		for _, p := range []string{"internal/dataplane/circuit", "internal/dataplane/limiter", "internal/dataplane/resilience", "internal/dataplane/sandbox"} {
			if !found[p] {
				t.Errorf("%s is not in the data-plane tree: the layout moved without this test", p)
			}
		}
		if checked < 40 {
			t.Fatalf("GOOS=%s: checked %d control-plane packages; the listing is wrong", system, checked)
		}
	}
}

// TestDataPlaneImportsOnlyContracts checks the other side: a data-plane
// package imports the control plane only through dataPlaneMayImport, so no
// operator rule (metrics merging, the dashboard, drills, commands) leaks
// into the reference implementation.
func TestDataPlaneImportsOnlyContracts(t *testing.T) {
	for _, system := range goos {
		imports, _ := list(t, system)
		for pkg, is := range imports {
			if !under(pkg, dataPlane) {
				continue
			}
			for _, i := range is {
				if !strings.HasPrefix(i, module) || under(i, dataPlane) {
					continue
				}
				if rel := strings.TrimPrefix(i, module); !slices.Contains(dataPlaneMayImport, rel) {
					t.Errorf("GOOS=%s: %s imports %s, which is not a contract package: move what it needs into one (see dataPlaneMayImport)", system, strings.TrimPrefix(pkg, module), rel)
				}
			}
		}
	}
}

// drillLayers are the drill's packages in import order: each may import
// the ones before it, never one after (the file model, the runtime, the
// kinds, the runner). drillReaders read a drill's journal and never run
// one. drillFileModelNever are the domain packages the file model never
// depends on: acting on them is the runtime's and the kinds' business.
var (
	drillLayers = []string{
		module + "internal/drill",
		module + "internal/drill/runtime",
		module + "internal/drill/kinds",
		module + "internal/drill/runner",
	}
	drillReaders = []string{
		module + "internal/gameday",
	}
	drillFileModelNever = []string{"audit", "breaker", "chaos", "metrics", "ratelimit", "store", "notify", "identity", "awsconf", "gauge"}
)

// TestDrillLayers checks the drill's import order (drill <- runtime <-
// kinds <- runner, docs/project-layout.md), that the file model depends on
// no domain package, and that what only reads a journal (the game-day
// report) does not depend on the runner.
func TestDrillLayers(t *testing.T) {
	for _, system := range goos {
		imports, deps := list(t, system)
		for i, pkg := range drillLayers {
			if _, ok := imports[pkg]; !ok {
				t.Fatalf("GOOS=%s: %s is not listed: the layout moved without this test", system, strings.TrimPrefix(pkg, module))
			}
			for _, later := range drillLayers[i+1:] {
				if slices.Contains(deps[pkg], later) {
					t.Errorf("GOOS=%s: %s depends on %s, a later drill layer", system, strings.TrimPrefix(pkg, module), strings.TrimPrefix(later, module))
				}
			}
		}
		for _, dep := range deps[drillLayers[0]] {
			for _, domain := range drillFileModelNever {
				if d := module + "internal/" + domain; dep == d || strings.HasPrefix(dep, d+"/") {
					t.Errorf("GOOS=%s: the drill file model depends on %s: what acts on it belongs to drill/runtime or drill/kinds", system, strings.TrimPrefix(dep, module))
				}
			}
		}
		for _, pkg := range drillReaders {
			if slices.Contains(deps[pkg], drillLayers[len(drillLayers)-1]) {
				t.Errorf("GOOS=%s: %s depends on the drill runner: a journal's values belong to package drill", system, strings.TrimPrefix(pkg, module))
			}
		}
	}
}

// everyKind are the packages that serve every lever kind: they look a kind
// up in a registry (internal/lever) and never import one, so a new kind is
// a new package and one registration line (internal/lever/builtin).
var everyKind = []string{
	"internal/lever", "internal/approval", "internal/notify", "internal/iam", "internal/policy",
	"internal/cmd/mcp", "internal/cmd/cmdenv", "internal/cmd/levercmd",
}

// leverKinds are the lever kinds koshactl has.
var leverKinds = []string{"internal/breaker", "internal/ratelimit", "internal/freeze"}

// TestPackagesOfEveryKindImportNone lists the dependencies (tests
// excluded) of the packages every lever kind goes through, and fails on one
// that reaches a kind: it must look kinds up instead.
func TestPackagesOfEveryKindImportNone(t *testing.T) {
	for _, system := range goos {
		_, deps := list(t, system)
		for _, pkg := range everyKind {
			ds, ok := deps[module+pkg]
			if !ok {
				t.Fatalf("GOOS=%s: %s is not listed: the layout moved without this test", system, pkg)
			}
			for _, k := range leverKinds {
				if slices.Contains(ds, module+k) {
					t.Errorf("GOOS=%s: %s depends on the lever kind %s: look it up in a lever.Registry instead", system, pkg, k)
				}
			}
		}
	}
}
