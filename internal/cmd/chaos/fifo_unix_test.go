//go:build unix

package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/fsnodes"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// watchdog bounds a test of something that used to hang: a command that
// has not returned by then has hung, and the test fails instead of waiting
// for the test binary's own timeout. It is a bound on failure, not a wait.
const watchdog = wait.Ceiling

// runBounded runs args and fails the test if they do not return within the
// watchdog; unblock then releases whatever the command hangs on.
func runBounded(t *testing.T, e *clitest.Env, ctx context.Context, unblock func(), args ...string) clitest.Result {
	t.Helper()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.RunContext(ctx, args...) }()
	select {
	case r := <-done:
		return r
	case <-time.After(watchdog):
		unblock()
		<-done
		t.Fatalf("koshactl %s hung (no result after %s)", strings.Join(args, " "), watchdog)
		return clitest.Result{}
	}
}

// mkfifo makes a named pipe with mode 0600 (so the key file's permission
// check would pass) and returns its path and a function that opens its
// write end, which releases a reader blocked on it.
func mkfifo(t *testing.T) (string, func()) {
	t.Helper()
	path := fsnodes.FIFO(t, t.TempDir(), "chaos.key")
	unblock := func() {
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
	}
	return path, unblock
}

func TestKeyFileFIFOIsRefusedWithoutBlocking(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fifo, unblock := mkfifo(t)
	sign := e.MustRun(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value")
	header := strings.TrimSpace(sign.Stdout)
	for _, args := range [][]string{
		{"chaos", "sign", "--target", "openai", "--fault", "error", "--key-file", fifo},
		{"chaos", "verify", header, "--key-file", fifo},
		{"chaos", "key", "id", "--key-file", fifo},
		{"sandbox", "--chaos", "--key-file", fifo, "--listen", "127.0.0.1:0"},
	} {
		r := runBounded(t, e, context.Background(), unblock, args...)
		if r.Code != exitcode.Usage {
			t.Errorf("koshactl %s: exit %d, want %d\n%s", strings.Join(args, " "), r.Code, exitcode.Usage, r.Stderr)
		}
		if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); len(lines) != 1 ||
			!strings.Contains(lines[0], fifo+" is a named pipe, not a regular file") || !strings.Contains(lines[0], "give the path of a regular file") {
			t.Errorf("koshactl %s: want one error line naming the pipe and the fix, got:\n%s", strings.Join(args, " "), r.Stderr)
		}
		if strings.Contains(r.Stdout, "X-Kosha-Chaos") {
			t.Errorf("koshactl %s printed a header: %q", strings.Join(args, " "), r.Stdout)
		}
	}
}

func TestDrillKeyFileFIFOIsRefusedWithoutBlocking(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fifo, unblock := mkfifo(t)
	drill := filepath.Join(t.TempDir(), "sign.yaml")
	if err := os.WriteFile(drill, []byte("version: 1\nname: sign\ncontext: local\ntimeout: 1m\nsteps:\n"+
		"  - id: sign\n    chaos.sign:\n      target: openai\n      fault: error\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBounded(t, e, context.Background(), unblock, "drill", "run", drill, "--key-file", fifo, "--journal", filepath.Join(t.TempDir(), "j.json"))
	if r.Code == exitcode.OK || !strings.Contains(r.Stdout+r.Stderr, "named pipe") {
		t.Errorf("drill with a FIFO key file: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// blockingReader is a stdin that never delivers a byte: it reports the
// first Read, then blocks on a pipe nobody writes until the test ends.
type blockingReader struct {
	reading chan struct{}
	r       *os.File
}

func (b *blockingReader) Read(p []byte) (int, error) {
	select {
	case <-b.reading:
	default:
		close(b.reading)
	}
	return b.r.Read(p)
}

func TestVerifyStdinReadEndsOnCancel(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fifo, _ := mkfifo(t)
	// O_RDWR opens a FIFO without waiting for a writer, and since this end
	// is also a writer, a read waits for data instead of seeing EOF.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	in := &blockingReader{reading: make(chan struct{}), r: f}
	e.In = in
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-in.reading // the command is now waiting in the read
		cancel()
	}()
	// Closing the descriptor interrupts a read stuck on it (a FIFO is polled).
	r := runBounded(t, e, ctx, func() { _ = f.Close() }, "chaos", "verify", "-")
	if r.Code != exitcode.Interrupted {
		t.Errorf("chaos verify - interrupted while reading stdin: exit %d, want %d\n%s", r.Code, exitcode.Interrupted, r.Stderr)
	}
}
