//go:build unix

package runner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// The lock file names its holder: a second taker is told who holds it,
// and a later one who held it last.
func TestLockNamesItsHolder(t *testing.T) {
	j := filepath.Join(t.TempDir(), "journal.json")
	me := ThisProcess("drill run", LockPath(j))
	lock, err := LockJournal(j, me)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockJournal(j, ThisProcess("drill recover", LockPath(j)))
	var locked *LockedError
	if !errors.As(err, &locked) || !errors.Is(err, ErrJournalLocked) || locked.Holder == nil || *locked.Holder != *me {
		t.Fatalf("second lock: %v (holder %+v), want held by %+v", err, locked, me)
	}
	lock.Release()
	again, err := LockJournal(j, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release()
	if again.Previous == nil || *again.Previous != *me {
		t.Errorf("previous holder %+v, want %+v", again.Previous, me)
	}
	if st, err := os.Stat(LockPath(j)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v", st, err)
	}
}

// A recorded process is alive while it runs, gone once it exited, and (on
// Linux) gone when its pid now belongs to a process started at another time.
func TestCheckProcessTellsLiveFromGone(t *testing.T) {
	me := ThisProcess("drill run", "")
	if live, err := CheckProcess(*me); live != LivenessAlive {
		t.Fatalf("this process: %v %v", live, err)
	}
	c := exec.CommandContext(t.Context(), "true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	gone := *me
	gone.PID = c.Process.Pid
	if live, err := CheckProcess(gone); live != LivenessGone {
		t.Errorf("an exited process: %v %v", live, err)
	}
	if runtime.GOOS == "linux" {
		if me.ProcStart == "" {
			t.Fatal("no start token on Linux")
		}
		reused := *me
		reused.ProcStart = me.ProcStart + "0"
		if live, _ := CheckProcess(reused); live != LivenessReused {
			t.Errorf("a reused pid: %v, want reused", live)
		}
	}
	other := *me
	other.Host = "elsewhere.example"
	if live, err := CheckProcess(other); live != LivenessUnknown || err == nil {
		t.Errorf("another host: %v %v", live, err)
	}
}
