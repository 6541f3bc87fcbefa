//go:build !unix

package fsutil

// openNonBlock is 0 where opening a file cannot block on a missing writer.
const openNonBlock = 0
