//go:build unix

package runner

import (
	"errors"
	"syscall"

	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// lockFile takes an exclusive flock on path (created if absent) without
// waiting. The kernel releases it when the process ends, however it ends
// (SIGKILL included), so a held lock means a live holder, whatever pid
// numbers were reused since.
func lockFile(path string) (func(), error) {
	// Created (mode 0600) or opened without following a link; anything
	// but a regular file is refused.
	f, err := fsutil.OpenOrCreateRegular(path, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrJournalLocked
		}
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}
