package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// Liveness is what can be told, from here, of a process a journal or a
// lock file names.
type Liveness int

const (
	// LivenessUnknown: it cannot be told (another host, or a system that
	// does not say).
	LivenessUnknown Liveness = iota
	// LivenessAlive: a process with its pid (and, where the system says,
	// its start time) runs.
	LivenessAlive
	// LivenessGone: no process has its pid.
	LivenessGone
	// LivenessReused: a process has its pid, but started at another time:
	// the pid was reused, the recorded process is gone.
	LivenessReused
)

// procInfo is what the system says of this process's start.
type procInfo struct {
	token   string
	started time.Time
}

// processStarted is when this process started, as far as it can tell.
var processStarted = time.Now()

// ThisProcess describes this process, running command ("drill run"), for a
// journal's runner record and a lock file: its pid, host and start (on
// Linux the start /proc records, which a later process given the same pid
// does not share).
func ThisProcess(command, lock string) *drill.RunnerRecord {
	host, _ := os.Hostname()
	p := procInfo{started: processStarted}
	thisProcess(&p)
	return &drill.RunnerRecord{PID: os.Getpid(), Host: host, Lock: lock, Command: command, StartedAt: p.started.UTC().Truncate(time.Second), ProcStart: p.token}
}

// CheckProcess says whether the process p records is alive, seen from this
// host. A process recorded on another host is LivenessUnknown.
func CheckProcess(p drill.RunnerRecord) (Liveness, error) {
	if host, _ := os.Hostname(); p.Host != "" && p.Host != host {
		return LivenessUnknown, fmt.Errorf("it ran on host %s, not this one (%s)", p.Host, host)
	}
	if p.PID <= 0 {
		return LivenessUnknown, fmt.Errorf("it records no pid")
	}
	return processState(p.PID, p.ProcStart)
}

// DescribeProcess names p for an operator: "pid N started at T on host H".
func DescribeProcess(p drill.RunnerRecord) string {
	s := fmt.Sprintf("pid %d", p.PID)
	if p.Command != "" {
		s = p.Command + " " + s
	}
	if !p.StartedAt.IsZero() {
		s += " started at " + p.StartedAt.UTC().Format(time.RFC3339)
	}
	if p.Host != "" {
		s += " on host " + p.Host
	}
	return s
}

// LockedError reports a journal whose lock a live process holds; it
// matches [ErrJournalLocked].
type LockedError struct {
	Lock string
	// Holder is what the holder wrote in the lock file; nil when it wrote
	// nothing readable.
	Holder *drill.RunnerRecord
}

func (e *LockedError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("%s is held by a live process", e.Lock)
	}
	return fmt.Sprintf("%s is held by %s", e.Lock, DescribeProcess(*e.Holder))
}

// Is makes errors.Is(err, ErrJournalLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrJournalLocked }

// JournalLock is a journal's lock, held.
type JournalLock struct {
	// Previous is what the lock's last holder wrote in it (nil when
	// nothing readable): a run or recover that has ended.
	Previous *drill.RunnerRecord
	release  func()
}

// Release releases the lock.
func (l *JournalLock) Release() { l.release() }

// LockJournal takes journal's lock without waiting and writes holder (this
// process, see [ThisProcess]; nil writes nothing) into the lock file. A
// *LockedError (matching ErrJournalLocked) means a live process holds it,
// and names that process.
func LockJournal(journal string, holder *drill.RunnerRecord) (*JournalLock, error) {
	var record []byte
	if holder != nil {
		var err error
		if record, err = json.Marshal(holder); err != nil {
			return nil, err
		}
	}
	release, held, err := lockFile(LockPath(journal), record)
	if err == ErrJournalLocked { //nolint:errorlint // lockFile returns the sentinel itself
		return nil, &LockedError{Lock: LockPath(journal), Holder: parseLockRecord(held)}
	}
	if err != nil {
		return nil, err
	}
	return &JournalLock{Previous: parseLockRecord(held), release: release}, nil
}

func parseLockRecord(b []byte) *drill.RunnerRecord {
	if len(b) == 0 {
		return nil
	}
	var p drill.RunnerRecord
	if err := json.Unmarshal(b, &p); err != nil || p.PID <= 0 {
		return nil
	}
	return &p
}
