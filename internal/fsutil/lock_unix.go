//go:build unix

package fsutil

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Lock takes an exclusive flock(2) on path, a lock file the caller owns:
// created with mode 0600 if absent, never through a link, never anything
// but a regular file. It tries every few milliseconds for at most wait,
// then fails with an error matching [ErrLocked]. The kernel releases the
// lock when release closes it or the process ends, however it ends.
func Lock(path string, wait time.Duration) (release func(), err error) {
	f, err := OpenOrCreateRegular(path, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return func() { _ = f.Close() }, nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		case time.Now().After(deadline):
			_ = f.Close()
			return nil, fmt.Errorf("%w: %s held for %s by another process", ErrLocked, path, wait)
		}
		time.Sleep(lockPoll)
	}
}
