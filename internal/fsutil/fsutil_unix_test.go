//go:build unix

package fsutil_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kosha-platform/koshactl/internal/fsutil"
)

func TestOpenRegularRefusesAFIFOWithoutWaitingForAWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// With a plain open this call would wait for a writer forever; the
	// test binary's timeout is the bound.
	_, _, err := fsutil.OpenRegular(path)
	var nr *fsutil.NotRegularError
	if !errors.As(err, &nr) || !errors.Is(err, fsutil.ErrNotRegular) || nr.Mode.Type()&fs.ModeNamedPipe == 0 {
		t.Fatalf("OpenRegular(fifo) = %v, want a NotRegularError for a named pipe", err)
	}
	if !strings.Contains(err.Error(), path+" is a named pipe") || !strings.Contains(err.Error(), "give the path of a regular file") {
		t.Errorf("error does not name the pipe and the fix: %v", err)
	}
	if _, _, err := fsutil.ReadRegular(path, 10); !errors.Is(err, fsutil.ErrNotRegular) {
		t.Errorf("ReadRegular(fifo) = %v", err)
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, st, err := fsutil.ReadRegular(path, 5)
	if err != nil || string(b) != "12345" || st.Size() != 5 {
		t.Fatalf("ReadRegular = %q, %v", b, err)
	}
	if _, _, err := fsutil.ReadRegular(path, 4); !errors.Is(err, fsutil.ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if _, _, err := fsutil.ReadRegular(dir, 4); !errors.Is(err, fsutil.ErrNotRegular) {
		t.Errorf("a directory: %v", err)
	}
	if _, _, err := fsutil.ReadRegular(filepath.Join(dir, "absent"), 4); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if b, _, err := fsutil.ReadRegular(link, 5); err != nil || string(b) != "12345" {
		t.Errorf("through a symlink: %q, %v", b, err)
	}
}
