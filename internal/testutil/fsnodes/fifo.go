//go:build unix

package fsnodes

import (
	"path/filepath"
	"syscall"
	"testing"
)

// FIFO makes a named pipe dir/name with mode 0600 (so a key file's
// permission check would pass) and returns its path.
func FIFO(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
