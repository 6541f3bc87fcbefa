package procbench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Build compiles the main package pkg (an import path, or a directory such as
// ./testdata/peer, relative to the benchmark's package) into a temporary
// directory of tb, as the release builds koshactl, and returns the binary.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), filepath.Base(pkg))
	cmd := exec.CommandContext(tb.Context(), "go", "build", "-trimpath", "-o", bin, pkg) //nolint:gosec // G204: builds the benchmark's own programs into its temp dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Proc is one process to time: Name labels its metric (Name-ms).
type Proc struct {
	Name string
	Path string
	Args []string
	// Env is the process's whole environment; nil inherits the benchmark's.
	Env []string
}

// Compare runs every proc once per iteration of b, in turn, failing b if one
// exits non-zero. It reports each proc's median wall time as Name-ms and, for
// every proc after the first, the ratio of its median to the first's as
// Name/First, and returns the medians in the order of procs.
func Compare(b *testing.B, procs ...Proc) []time.Duration {
	b.Helper()
	times := make([][]time.Duration, len(procs))
	for b.Loop() {
		for i, p := range procs {
			times[i] = append(times[i], run(b, p))
		}
	}
	medians := make([]time.Duration, len(procs))
	for i, p := range procs {
		medians[i] = Median(times[i])
		b.ReportMetric(float64(medians[i].Microseconds())/1000, p.Name+"-ms")
		if i > 0 && medians[0] > 0 {
			b.ReportMetric(float64(medians[i])/float64(medians[0]), p.Name+"/"+procs[0].Name)
		}
	}
	return medians
}

func run(b *testing.B, p Proc) time.Duration {
	cmd := exec.CommandContext(b.Context(), p.Path, p.Args...) //nolint:gosec // G204: the benchmark runs the programs it compares
	cmd.Env = p.Env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", p.Name, p.Args, err, out)
	}
	return d
}

// Median is the middle of ds (the upper middle of an even count); 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
