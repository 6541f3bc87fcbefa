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
