//go:build unix

package runner

import (
	"errors"
	"io"
	"syscall"

	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// maxLockRecord bounds the holder record read from a lock file.
const maxLockRecord = 4 << 10

// lockFile takes an exclusive flock on path (created if absent) without
// waiting, and writes record into it. The kernel releases the lock when the
// process ends, however it ends (SIGKILL included), so a held lock means a
// live holder, whatever pid numbers were reused since. held is the record
// the holder wrote: the live one's when the lock is held (the error is
// ErrJournalLocked), else the last one's.
func lockFile(path string, record []byte) (release func(), held []byte, err error) {
	// Created (mode 0600) or opened without following a link; anything
	// but a regular file is refused.
	f, err := fsutil.OpenOrCreateRegular(path, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer func() { _ = f.Close() }()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := io.ReadAll(io.LimitReader(f, maxLockRecord))
			return nil, b, ErrJournalLocked
		}
		return nil, nil, err
	}
	// The previous holder's record, then this one's, for whoever finds the
	// lock held (or left).
	prev, _ := io.ReadAll(io.LimitReader(f, maxLockRecord))
	if record != nil {
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt(record, 0)
		}
	}
	return func() { _ = f.Close() }, prev, nil
}
