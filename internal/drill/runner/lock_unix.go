//go:build unix

package runner

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (created if absent) without
// waiting. The kernel releases it when the process ends, however it ends
// (SIGKILL included), so a held lock means a live holder, whatever pid
// numbers were reused since.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644) //nolint:gosec // G302,G304: the lock beside the operator's own journal; readable like it
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
