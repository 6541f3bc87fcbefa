//go:build unix

package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/fsnodes"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// runBounded runs the sandbox and waits for it to exit on its own: a
// refused output path ends it before it serves.
func runBounded(t *testing.T, cli *clitest.Env, args ...string) clitest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait.Ceiling)
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() {
		done <- cli.RunContext(ctx, append([]string{"sandbox", "--listen", "127.0.0.1:0"}, args...)...)
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(wait.Ceiling + time.Minute):
		t.Fatal("the sandbox did not return (blocked past its context)")
		return clitest.Result{}
	}
}

func unchanged(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != fsnodes.Victim {
		t.Errorf("the link's target was written: %.80q (%d bytes), %v", b, len(b), err)
	}
}

func TestAddrFileLinkIsRefusedBeforeStarting(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	link, victim := fsnodes.Link(t, t.TempDir(), "url")
	r := runBounded(t, cli, "--addr-file", link)
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, link+" is a symbolic link") || !strings.Contains(r.Stderr, "nothing was started") {
		t.Errorf("exit %d, stderr %q: want 2 naming the link", r.Code, r.Stderr)
	}
	if strings.Contains(r.Stdout, "serving on") {
		t.Error("the sandbox started")
	}
	unchanged(t, victim)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
}

// A link planted where the old code put its temporary file (P.tmp) is not
// followed: the address lands in P, the link's target is untouched.
func TestAddrFileTemporaryNameLinkIsNotFollowed(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	dir := t.TempDir()
	addr := filepath.Join(dir, "url")
	_, victim := fsnodes.Link(t, dir, "url.tmp")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() { done <- cli.RunContext(ctx, "sandbox", "--listen", "127.0.0.1:0", "--addr-file", addr) }()
	wait.Until(t, "the address in --addr-file", func() bool {
		select {
		case r := <-done:
			t.Fatalf("sandbox exited early: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		default:
		}
		b, err := os.ReadFile(addr)
		return err == nil && strings.HasPrefix(string(b), "http://")
	})
	unchanged(t, victim)
	cancel()
	if r := <-done; r.Code != 0 {
		t.Errorf("exit %d: %s", r.Code, r.Stderr)
	}
	unchanged(t, victim)
}

func TestAddrFileDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	dir := t.TempDir()
	r := runBounded(t, cli, "--addr-file", dir)
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, dir+" is a directory") {
		t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
	}
}

func TestEMFPipeWithoutReaderIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	fifo := fsnodes.FIFO(t, t.TempDir(), "emf")
	// The old open waited in the kernel for a reader, deaf to its context.
	r := runBounded(t, cli, "--emf", fifo)
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "no process is reading") || !strings.Contains(r.Stderr, "start the process that reads it first") {
		t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the pipe was replaced")
	}
}

func TestEMFDoesNotAppendThroughALink(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	link, victim := fsnodes.Link(t, t.TempDir(), "emf.jsonl")
	r := runBounded(t, cli, "--emf", link)
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, link+" is a symbolic link") {
		t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	unchanged(t, victim)
}
