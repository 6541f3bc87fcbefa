//go:build unix

package fsutil

import "syscall"

// openNonBlock makes open(2) of a FIFO return at once instead of waiting for
// a writer; on a regular file it changes nothing.
const openNonBlock = syscall.O_NONBLOCK
