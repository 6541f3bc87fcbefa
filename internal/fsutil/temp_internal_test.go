package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTempFileIsBesideARelativePath: the temporary file of a write to a
// bare file name is made in the working directory, beside the file it
// replaces (a rename is atomic only within one file system), never in the
// system's temporary directory.
func TestTempFileIsBesideARelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	f, err := createTemp("report.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	_ = f.Close()
	if got := filepath.Dir(f.Name()); got != "." {
		t.Errorf("temporary file %s is not in the working directory", f.Name())
	}
	if fi, err := os.Stat(filepath.Join(dir, filepath.Base(f.Name()))); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("temporary file not created beside report.xml with mode 0600: %v %v", fi, err)
	}
}
