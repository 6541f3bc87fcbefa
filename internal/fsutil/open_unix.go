//go:build unix

package fsutil

import (
	"errors"
	"os"
	"syscall"
)

const (
	// openNonBlock makes open(2) of a FIFO return at once instead of waiting
	// for a writer (or, for writing, failing with ENXIO when no reader); on a
	// regular file it changes nothing.
	openNonBlock = syscall.O_NONBLOCK
	// openNoFollow makes open(2) fail on a symbolic link in the last
	// component instead of following it.
	openNoFollow = syscall.O_NOFOLLOW
	// openNoCTTY keeps a terminal opened for output from becoming the
	// process's controlling terminal.
	openNoCTTY = syscall.O_NOCTTY
)

// isNoReader reports open(2)'s answer for a FIFO opened to write with
// O_NONBLOCK while no process has it open to read.
func isNoReader(err error) bool { return errors.Is(err, syscall.ENXIO) }

// isLink reports open(2)'s answer to O_NOFOLLOW on a symbolic link (ELOOP;
// EMLINK on FreeBSD and DragonFly, EFTYPE on NetBSD is not mapped).
func isLink(err error) bool { return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) }

// setBlocking clears O_NONBLOCK on f when Go's poller does not watch it
// (a FIFO on darwin, a device epoll refuses): without the poller a write to
// a full pipe would fail with EAGAIN instead of waiting for the reader.
func setBlocking(f *os.File) error {
	if err := f.SetWriteDeadline(noDeadline); !errors.Is(err, os.ErrNoDeadline) {
		return nil // the poller waits, and deadlines end the wait
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
