//go:build linux

package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// Issue 21 (probe): a run killed (SIGKILL) whose parent has not reaped it
// yet, or never will (a container whose init does not reap), is a zombie: its
// pid and start time are still in /proc, but it runs nothing and holds no
// lock. recover took it for a live run and refused (exit 4, "a run is still
// going") for as long as the zombie stayed. A zombie is gone.
func TestCheckProcessTakesAZombieForGone(t *testing.T) {
	c := exec.CommandContext(t.Context(), "cat") // waits on its stdin until killed
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	tok, _, _, ok, err := procStat(pid)
	if !ok || err != nil {
		t.Fatalf("procStat(%d) of a running child: %v %v", pid, ok, err)
	}
	rec := ThisProcess("drill run", "")
	rec.PID, rec.ProcStart = pid, tok
	if live, err := CheckProcess(*rec); live != LivenessAlive {
		t.Fatalf("the running child: %v %v, want alive", live, err)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Wait() }() // reaped when the test ends, not before
	wait.Until(t, fmt.Sprintf("pid %d to become a zombie", pid), func() bool { return isZombie(t, pid) })
	if live, err := CheckProcess(*rec); live != LivenessGone {
		t.Errorf("a killed, unreaped run: %v %v, want gone", live, err)
	}
}

func isZombie(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && bytes.HasPrefix(b[i+1:], []byte(" Z"))
}
