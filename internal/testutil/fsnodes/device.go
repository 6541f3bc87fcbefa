//go:build linux || darwin

package fsnodes

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Null makes dir/null, a character device with the null device's numbers
// (1, 3 on Linux): written to, it discards whatever is written. The null
// device itself is only looked at, never opened. It needs root.
func Null(t testing.TB, dir string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(os.DevNull, &st); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(st.Rdev)); err != nil { //nolint:gosec // G115: a Linux device number fits an int
		t.Fatalf("mknod (the test needs root): %v", err)
	}
	return p
}

// Block makes dir/disk, a block device node with the loop device's
// numbers; the tests only check it is refused, which happens before any
// open. It needs root.
func Block(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "disk")
	if err := syscall.Mknod(p, syscall.S_IFBLK|0o600, 7<<8); err != nil {
		t.Fatalf("mknod (the test needs root): %v", err)
	}
	return p
}
