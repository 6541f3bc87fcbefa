//go:build unix

package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/fsutil"
)

const oneContext = "contexts:\n  prod:\n    store:\n      dynamodb: {table: kosha-control, region: eu-west-1}\n"

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode passes through umask
		t.Fatal(err)
	}
}

func TestPermissionWarningForAFileOthersCanWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	for _, c := range []struct {
		mode os.FileMode
		warn bool
	}{{0o600, false}, {0o644, false}, {0o400, false}, {0o620, true}, {0o664, true}, {0o602, true}, {0o666, true}} {
		writeFile(t, path, oneContext, c.mode)
		f, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		w := f.PermissionWarning()
		if (w != "") != c.warn {
			t.Errorf("mode %04o: warning %q, want one: %v", c.mode, w, c.warn)
		}
		if c.warn && (!strings.Contains(w, "chooses the table") || !strings.Contains(w, "chmod 600 "+path) || strings.Contains(w, "\n")) {
			t.Errorf("mode %04o: warning does not name the risk and the fix on one line: %q", c.mode, w)
		}
	}
	// Through a symbolic link, the target's mode counts (the link's own is
	// always 0777).
	writeFile(t, path, oneContext, 0o600)
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if f, err := config.Load(link); err != nil || f.PermissionWarning() != "" {
		t.Errorf("a 0600 file behind a link: %v %q", err, f.PermissionWarning())
	}
	if f, _ := config.Load(filepath.Join(dir, "absent.yaml")); f.PermissionWarning() != "" {
		t.Error("a missing file warned")
	}
}

func TestLoadRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// A plain read would wait for a writer forever.
	if _, err := config.Load(path); !errors.Is(err, fsutil.ErrNotRegular) {
		t.Fatalf("Load(fifo) = %v, want ErrNotRegular", err)
	}
}

// A config kept elsewhere (a dotfiles checkout) and linked into place keeps
// its link: Update writes through to the target, atomically, in the target's
// directory.
func TestUpdateWritesThroughASymlink(t *testing.T) {
	for _, relative := range []bool{false, true} {
		root := t.TempDir()
		dotfiles := filepath.Join(root, "dotfiles")
		confDir := filepath.Join(root, "conf")
		for _, d := range []string{dotfiles, confDir} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(dotfiles, "koshactl.yaml")
		writeFile(t, target, oneContext, 0o600)
		dest := target
		if relative {
			dest = filepath.Join("..", "dotfiles", "koshactl.yaml")
		}
		// A chain: config.yaml -> mid.yaml -> the target.
		mid := filepath.Join(confDir, "mid.yaml")
		if err := os.Symlink(dest, mid); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(confDir, "config.yaml")
		if err := os.Symlink("mid.yaml", link); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Update(link, func(f *config.File) error {
			f.Contexts["dev"] = config.BuiltinLocal()
			return nil
		}); err != nil {
			t.Fatalf("relative %v: Update: %v", relative, err)
		}
		for _, l := range []string{link, mid} {
			if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("relative %v: %s is no longer a symbolic link (%v)", relative, l, err)
			}
		}
		got, err := config.Load(target)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Contexts["dev"]; !ok {
			t.Errorf("relative %v: the target lacks the saved context: %v", relative, got.Names())
		}
		if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
			t.Errorf("relative %v: target mode %04o", relative, fi.Mode().Perm())
		}
		for _, d := range []string{dotfiles, confDir} {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".config-") {
					t.Errorf("relative %v: temporary file %s left in %s", relative, e.Name(), d)
				}
			}
		}
		// The changed-since-read guarantee holds through the link: a writer
		// that does not take the lock saves while the change is made.
		if _, err := config.Update(link, func(f *config.File) error {
			f.CurrentContext = "prod"
			return os.WriteFile(link, []byte(oneContext), 0o600)
		}); !errors.Is(err, config.ErrChanged) {
			t.Errorf("relative %v: a stale save through the link: %v, want ErrChanged", relative, err)
		}
	}
}

func TestUpdateThroughADanglingSymlinkCreatesTheTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.yaml")
	link := filepath.Join(dir, "config.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(link)
	if err != nil || f.Exists() {
		t.Fatalf("Load(dangling) = %v, exists %v", err, f.Exists())
	}
	if _, err := config.Update(link, func(f *config.File) error {
		f.CurrentContext = "local"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced (%v)", err)
	}
	if got, err := config.Load(target); err != nil || got.CurrentContext != "local" {
		t.Errorf("target: %v %+v", err, got)
	}
}

func TestUpdateRefusesASymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	// Someone turns the file into a loop.
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Update(a, func(*config.File) error { return nil }); err == nil || !strings.Contains(err.Error(), "symbolic links in a row") {
		t.Errorf("Update through a loop: %v", err)
	}
}
