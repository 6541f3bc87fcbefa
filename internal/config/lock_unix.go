//go:build unix

package config

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// lockPath takes an exclusive flock on path (created 0600 if absent, never
// through a link, never anything but a regular file), waiting at most
// lockWait for another koshactl writing the config. The kernel releases it
// when the process ends, however it ends.
func lockPath(path string) (release func(), err error) {
	f, err := fsutil.OpenOrCreateRegular(path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock config: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: another koshactl has held %s for %s; re-run the command once it is done", ErrChanged, path, lockWait)
			}
			return nil, fmt.Errorf("lock config: %w", err)
		}
		time.Sleep(lockPoll)
	}
}
