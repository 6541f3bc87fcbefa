package procbench

import (
	"os"
	"os/exec"
	"testing"
)

// PeakRSS runs cmd to its end, its stdout and stderr to the null device
// unless set, failing tb if it exits non-zero, and returns the most memory
// the process held resident at once (the kernel's ru_maxrss), in bytes.
// ok is false where the system does not report it.
func PeakRSS(tb testing.TB, cmd *exec.Cmd) (bytes int64, ok bool) {
	tb.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer null.Close()
	if cmd.Stdout == nil {
		cmd.Stdout = null
	}
	if cmd.Stderr == nil {
		cmd.Stderr = null
	}
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%v: %v", cmd.Args, err)
	}
	return maxRSS(cmd.ProcessState)
}

// PeakRSSByFormat runs bin with args and "-o FORMAT" as a process, under
// env, once a loop of a sub-benchmark per output format (table, json and
// yaml), reports each format's peak resident memory (peak-rss-MiB) and
// fails the format whose peak is over ceiling bytes; what names the listing
// in that failure.
func PeakRSSByFormat(b *testing.B, bin string, env []string, ceiling int64, what string, args ...string) {
	b.Helper()
	for _, format := range []string{"table", "json", "yaml"} {
		b.Run("output="+format, func(b *testing.B) {
			var peak int64
			for b.Loop() {
				cmd := exec.CommandContext(b.Context(), bin, append(args, "-o", format)...) //nolint:gosec // G204: the binary the benchmark built
				cmd.Env = env
				rss, ok := PeakRSS(b, cmd)
				if !ok {
					b.Skip("this system does not report a process's peak resident memory")
				}
				peak = max(peak, rss)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
			if peak > ceiling {
				b.Errorf("%s -o %s peaked at %.0f MiB resident, want under %d MiB", what, format, float64(peak)/(1<<20), ceiling>>20)
			}
		})
	}
}
