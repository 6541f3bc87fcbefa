//go:build linux || darwin

package fsutil_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/testutil/fsnodes"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// The kinds of path every output function is tried on, each made in the
// test's own directory.

func mkRegular(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "regular")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mode(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func content(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTemp fails when a temporary file was left in dir.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func wantRefused(t *testing.T, err error, path, what string) {
	t.Helper()
	var oe *fsutil.OutputError
	if !errors.As(err, &oe) || !errors.Is(err, fsutil.ErrOutputRefused) {
		t.Fatalf("err = %v, want an OutputError", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, path+" is a "+what+": ") || strings.Contains(msg, "\n") {
		t.Errorf("error %q does not name %s as a %s on one line", msg, path, what)
	}
}

// openReader opens the pipe at p for reading, and a writer of the test's
// own so that a read waits for data instead of reading EOF before the
// writer under test connects.
func openReader(t *testing.T, p string) *os.File {
	t.Helper()
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(); _ = r.Close() })
	return r
}

// readN reads n bytes from the pipe at p in the background; the returned
// function waits for them.
func readN(t *testing.T, p string, n int) func() string {
	t.Helper()
	r := openReader(t, p)
	done := make(chan string, 1)
	go func() {
		b := make([]byte, n)
		k, _ := io.ReadFull(r, b)
		done <- string(b[:k])
	}()
	return func() string {
		select {
		case s := <-done:
			return s
		case <-time.After(wait.Ceiling):
			t.Fatal("the pipe's reader got nothing")
			return ""
		}
	}
}

func TestWriteFileEachKindOfPath(t *testing.T) {
	ctx := context.Background()
	data := []byte("new report\n")

	t.Run("absent", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "report.xml")
		if err := fsutil.WriteFile(ctx, p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := content(t, p); got != string(data) || mode(t, p) != 0o644 {
			t.Errorf("wrote %q mode %v", got, mode(t, p))
		}
		noTemp(t, dir)
	})
	t.Run("regular", func(t *testing.T) {
		dir := t.TempDir()
		p := mkRegular(t, dir)
		hard := filepath.Join(dir, "hardlink")
		if err := os.Link(p, hard); err != nil {
			t.Fatal(err)
		}
		if err := fsutil.WriteFile(ctx, p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := content(t, p); got != string(data) || mode(t, p) != 0o600 {
			t.Errorf("wrote %q mode %v", got, mode(t, p))
		}
		// Replaced by rename, not written through: another name of the
		// old file keeps the old content.
		if got := content(t, hard); got != "old\n" {
			t.Errorf("the old file was written in place: %q", got)
		}
		noTemp(t, dir)
	})
	t.Run("link", func(t *testing.T) {
		dir := t.TempDir()
		link, victim := fsnodes.Link(t, dir, "link")
		wantRefused(t, fsutil.WriteFile(ctx, link, data, 0o644), link, "symbolic link")
		if content(t, victim) != fsnodes.Victim || mode(t, link)&fs.ModeSymlink == 0 {
			t.Error("the link or its target changed")
		}
		noTemp(t, dir)
	})
	t.Run("dangling link", func(t *testing.T) {
		dir := t.TempDir()
		link := filepath.Join(dir, "link")
		if err := os.Symlink(filepath.Join(dir, "created-through-link"), link); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, fsutil.WriteFile(ctx, link, data, 0o644), link, "symbolic link")
		if _, err := os.Lstat(filepath.Join(dir, "created-through-link")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("a file was created through the link")
		}
	})
	t.Run("fifo with a reader", func(t *testing.T) {
		dir := t.TempDir()
		p := fsnodes.FIFO(t, dir, "pipe")
		got := readN(t, p, len(data))
		if err := fsutil.WriteFile(ctx, p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if s := got(); s != string(data) {
			t.Errorf("the reader got %q", s)
		}
		if mode(t, p)&fs.ModeNamedPipe == 0 {
			t.Errorf("the pipe was replaced: %v", mode(t, p))
		}
		noTemp(t, dir)
	})
	t.Run("fifo without a reader", func(t *testing.T) {
		dir := t.TempDir()
		p := fsnodes.FIFO(t, dir, "pipe")
		// A plain open would wait for a reader forever; the test binary's
		// timeout is the bound.
		err := fsutil.WriteFile(ctx, p, data, 0o644)
		if !errors.Is(err, fsutil.ErrNoReader) {
			t.Fatalf("err = %v, want ErrNoReader", err)
		}
		wantRefused(t, err, p, "named pipe no process is reading")
		if !strings.Contains(err.Error(), "start the process that reads it first") {
			t.Errorf("no fix in %q", err)
		}
		if mode(t, p)&fs.ModeNamedPipe == 0 {
			t.Errorf("the pipe was replaced: %v", mode(t, p))
		}
	})
	t.Run("character device", func(t *testing.T) {
		dir := t.TempDir()
		p := fsnodes.Null(t, dir)
		before := mode(t, p)
		if err := fsutil.WriteFile(ctx, p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if after := mode(t, p); after != before {
			t.Errorf("the device was replaced: %v, was %v", after, before)
		}
		noTemp(t, dir)
	})
	t.Run("block device", func(t *testing.T) {
		dir := t.TempDir()
		p := fsnodes.Block(t, dir)
		wantRefused(t, fsutil.WriteFile(ctx, p, data, 0o644), p, "block device")
		if mode(t, p)&fs.ModeDevice == 0 {
			t.Error("the device was replaced")
		}
	})
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		wantRefused(t, fsutil.WriteFile(ctx, dir, data, 0o644), dir, "directory")
	})
	t.Run("canceled", func(t *testing.T) {
		dir := t.TempDir()
		p := mkRegular(t, dir)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := fsutil.WriteFile(cctx, p, data, 0o644); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if content(t, p) != "old\n" {
			t.Error("a canceled write replaced the file")
		}
	})
}

func TestWriteFileToAStalledPipeEndsWithTheContext(t *testing.T) {
	p := fsnodes.FIFO(t, t.TempDir(), "pipe")
	r := openReader(t, p)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupted")
	// The reader takes the first bytes, so the write is under way, then
	// stops reading and ends the context: the rest of 4 MiB cannot fit in
	// the pipe's buffer (64 KiB on Linux), so only the context can end the
	// write.
	go func() {
		_, _ = r.Read(make([]byte, 1))
		cancel(cause)
	}()
	done := make(chan error, 1)
	go func() { done <- fsutil.WriteFile(ctx, p, make([]byte, 4<<20), 0o644) }()
	select {
	case err := <-done:
		if !errors.Is(err, cause) {
			t.Fatalf("err = %v, want the context's cause", err)
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("the write did not end with its context")
	}
}

func TestReplaceFileRefusesPipesAndDevices(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, c := range []struct {
		path, what string
	}{
		{fsnodes.FIFO(t, dir, "pipe"), "named pipe"},
		{fsnodes.Null(t, dir), "character device"},
		{fsnodes.Block(t, dir), "block device"},
		{dir, "directory"},
	} {
		before := mode(t, c.path)
		err := fsutil.ReplaceFile(ctx, c.path, []byte("x"), 0o644)
		wantRefused(t, err, c.path, c.what)
		if mode(t, c.path) != before {
			t.Errorf("%s was replaced", c.path)
		}
	}
	link, victim := fsnodes.Link(t, dir, "link")
	wantRefused(t, fsutil.ReplaceFile(ctx, link, []byte("x"), 0o644), link, "symbolic link")
	if content(t, victim) != fsnodes.Victim {
		t.Error("the link's target changed")
	}
	p := mkRegular(t, dir)
	if err := fsutil.ReplaceFile(ctx, p, []byte("x"), 0o644); err != nil || content(t, p) != "x" {
		t.Errorf("regular: %v", err)
	}
	abs := filepath.Join(dir, "absent")
	if err := fsutil.ReplaceFile(ctx, abs, []byte("y"), 0o600); err != nil || content(t, abs) != "y" || mode(t, abs) != 0o600 {
		t.Errorf("absent: %v", err)
	}
	noTemp(t, dir)
}

func TestCreateNewNeverReplaces(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	if err := fsutil.CreateNew(ctx, p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if content(t, p) != "first" || mode(t, p) != 0o600 {
		t.Errorf("created %q %v", content(t, p), mode(t, p))
	}
	if err := fsutil.CreateNew(ctx, p, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("over a regular file: %v", err)
	}
	link, victim := fsnodes.Link(t, dir, "link")
	if err := fsutil.CreateNew(ctx, link, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("over a link: %v", err)
	}
	fifo := fsnodes.FIFO(t, dir, "pipe")
	if err := fsutil.CreateNew(ctx, fifo, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("over a pipe: %v", err)
	}
	if content(t, p) != "first" || content(t, victim) != fsnodes.Victim || mode(t, fifo)&fs.ModeNamedPipe == 0 {
		t.Error("an existing entry changed")
	}
	noTemp(t, dir)
}

func TestOpenAppendEachKindOfPath(t *testing.T) {
	ctx := context.Background()
	appendLine := func(t *testing.T, p string) error {
		t.Helper()
		f, err := fsutil.OpenAppend(ctx, p, 0o600)
		if err != nil {
			return err
		}
		_, err = f.WriteString("line\n")
		return errors.Join(err, f.Close())
	}
	dir := t.TempDir()

	abs := filepath.Join(dir, "emf.log")
	if err := appendLine(t, abs); err != nil {
		t.Fatal(err)
	}
	if err := appendLine(t, abs); err != nil {
		t.Fatal(err)
	}
	if content(t, abs) != "line\nline\n" || mode(t, abs) != 0o600 {
		t.Errorf("absent then regular: %q %v", content(t, abs), mode(t, abs))
	}

	link, victim := fsnodes.Link(t, dir, "link")
	wantRefused(t, appendLine(t, link), link, "symbolic link")
	if content(t, victim) != fsnodes.Victim {
		t.Error("appended through the link")
	}

	fifo := fsnodes.FIFO(t, dir, "pipe")
	if err := appendLine(t, fifo); !errors.Is(err, fsutil.ErrNoReader) {
		t.Errorf("pipe without a reader: %v", err)
	}
	got := readN(t, fifo, len("line\n"))
	if err := appendLine(t, fifo); err != nil {
		t.Fatal(err)
	}
	if s := got(); s != "line\n" || mode(t, fifo)&fs.ModeNamedPipe == 0 {
		t.Errorf("pipe with a reader: read %q", s)
	}

	null := fsnodes.Null(t, dir)
	if err := appendLine(t, null); err != nil || mode(t, null)&fs.ModeCharDevice == 0 {
		t.Errorf("character device: %v", err)
	}
	blk := fsnodes.Block(t, dir)
	wantRefused(t, appendLine(t, blk), blk, "block device")
	wantRefused(t, appendLine(t, dir), dir, "directory")
}

func TestOpenAppendCloseEndsAStalledWrite(t *testing.T) {
	p := fsnodes.FIFO(t, t.TempDir(), "pipe")
	r := openReader(t, p)
	f, err := fsutil.OpenAppend(context.Background(), p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// As above: the reader takes the first bytes and stops; then the file
	// is closed under the waiting write.
	go func() {
		_, _ = r.Read(make([]byte, 1))
		_ = f.Close()
	}()
	done := make(chan error, 1)
	go func() { _, err := f.Write(make([]byte, 4<<20)); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("err = %v, want os.ErrClosed", err)
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("closing did not end the write")
	}
}

func TestOpenOrCreateRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "journal.lock")
	f, err := fsutil.OpenOrCreateRegular(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if mode(t, p) != 0o600 {
		t.Errorf("mode %v", mode(t, p))
	}
	if f, err = fsutil.OpenOrCreateRegular(p, 0o600); err != nil {
		t.Fatalf("existing: %v", err)
	}
	_ = f.Close()
	link, victim := fsnodes.Link(t, dir, "link")
	_, err = fsutil.OpenOrCreateRegular(link, 0o600)
	wantRefused(t, err, link, "symbolic link")
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "through"), dangling); err != nil {
		t.Fatal(err)
	}
	_, err = fsutil.OpenOrCreateRegular(dangling, 0o600)
	wantRefused(t, err, dangling, "symbolic link")
	if _, err := os.Lstat(filepath.Join(dir, "through")); !errors.Is(err, fs.ErrNotExist) || content(t, victim) != fsnodes.Victim {
		t.Error("a file was created or changed through a link")
	}
	for _, c := range []struct{ path, what string }{
		{fsnodes.FIFO(t, dir, "pipe"), "named pipe"}, {fsnodes.Null(t, dir), "character device"}, {fsnodes.Block(t, dir), "block device"}, {dir, "directory"},
	} {
		_, err := fsutil.OpenOrCreateRegular(c.path, 0o600)
		wantRefused(t, err, c.path, c.what)
	}
}

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path    string
		special bool
		ok      bool
	}{
		{filepath.Join(dir, "absent"), false, true},
		{mkRegular(t, dir), false, true},
		{fsnodes.FIFO(t, dir, "pipe"), true, true},
		{filepath.Join(dir, "pipe"), false, false},
		{fsnodes.Null(t, dir), true, true},
		{filepath.Join(dir, "null"), false, false},
		{fsnodes.Block(t, dir), true, false},
		{dir, true, false},
		{filepath.Join(dir, "no-such-dir", "f"), true, false},
	} {
		err := fsutil.CheckOutput(c.path, c.special)
		if (err == nil) != c.ok {
			t.Errorf("CheckOutput(%s, %v) = %v, want ok %v", c.path, c.special, err, c.ok)
		}
	}
	link, _ := fsnodes.Link(t, dir, "link")
	wantRefused(t, fsutil.CheckOutput(link, true), link, "symbolic link")
	noTemp(t, dir)
}
