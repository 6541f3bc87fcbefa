//go:build unix

package keys_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// A pipe or a link planted as the previous key file is refused by a
// rotation, not replaced, and the current key stays.
func TestLocalRotateRefusesAPlantedPreviousFile(t *testing.T) {
	ctx := context.Background()
	for name, plant := range map[string]func(string) error{
		"pipe": func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"link": func(p string) error { return os.Symlink(filepath.Join(filepath.Dir(p), "elsewhere"), p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := keys.NewLocal(dir)
			cur, err := l.Current(ctx)
			if err != nil {
				t.Fatal(err)
			}
			prev := filepath.Join(dir, keys.LocalPreviousFile)
			if err := plant(prev); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(prev)
			_, err = l.Rotate(ctx, keys.RotateOptions{})
			if !errors.Is(err, fsutil.ErrOutputRefused) {
				t.Fatalf("Rotate = %v, want the planted file refused", err)
			}
			after, _ := os.Lstat(prev)
			if after == nil || after.Mode().Type() != before.Mode().Type() {
				t.Errorf("the planted %s was replaced", name)
			}
			if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !errors.Is(err, fs.ErrNotExist) {
				t.Error("a key was written through the link")
			}
			if got, err := l.Current(ctx); err != nil || got.ExportBase64() != cur.ExportBase64() {
				t.Errorf("the current key changed: %v", err)
			}
		})
	}
}
