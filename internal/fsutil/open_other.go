//go:build !unix

package fsutil

import "os"

const (
	// openNonBlock is 0 where opening a file cannot block on a missing writer.
	openNonBlock = 0
	// openNoFollow is 0 where open has no such flag: the check before the
	// open is what refuses a link.
	openNoFollow = 0
	// openNoCTTY is 0 where there are no controlling terminals.
	openNoCTTY = 0
)

func isNoReader(error) bool { return false }

func isLink(error) bool { return false }

func setBlocking(*os.File) error { return nil }
