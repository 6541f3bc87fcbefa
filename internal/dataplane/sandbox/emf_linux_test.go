//go:build linux

package sandbox_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// stalledFIFO returns the write end, opened as koshactl sandbox --emf opens
// it, of a FIFO whose reader holds it open and never reads, with the pipe
// shrunk to a page and already full: the next write blocks.
func stalledFIFO(t *testing.T) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "emf.fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Close() })
	size, err := unix.FcntlInt(reader.Fd(), unix.F_SETPIPE_SZ, 4096)
	if err != nil {
		t.Fatal(err)
	}
	w, err := fsutil.OpenAppend(t.Context(), path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	// Exactly the pipe's size: written at once, and the pipe is full.
	if n, err := w.Write([]byte(strings.Repeat("x", size))); err != nil || n != size {
		t.Fatalf("fill the pipe: %d of %d bytes: %v", n, size, err)
	}
	return w
}

// A reader that opened the EMF pipe and stopped reading holds a write
// forever. The shutdown gives the EMF lines one drain time, then gives them
// up in one log line: it ends without error, and the audit records queued
// are still flushed (before the fix it used its whole deadline waiting on
// the write and the audit flush failed with it).
func TestShutdownGivesUpEMFLinesAStalledPipeHolds(t *testing.T) {
	var logs syncbuf.Buffer
	fifo := stalledFIFO(t)
	cfg := testConfig()
	h := start(t, cfg, func(d *sandbox.Deps) {
		d.EMF = fifo
		d.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	// A record queued for the audit writer when the shutdown begins.
	h.screen(operator, "gw-1", h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil))

	// The shutdown's own deadline is well past the drain time: only a write
	// left blocked uses it up.
	ctx, cancel := context.WithTimeout(context.Background(), wait.Ceiling)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v, want the EMF lines given up and the rest stopped cleanly", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Shutdown used its whole deadline")
	}
	if n := len(h.records(sandbox.ActionChaosApplied)); n != 1 {
		t.Errorf("chaos.applied records after Shutdown: %d, want 1 (flushed despite the stalled EMF pipe)", n)
	}
	if n := strings.Count(logs.String(), "event=emf_lines_lost"); n != 1 {
		t.Errorf("%d emf_lines_lost lines, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "event=emf_write_failed") {
		t.Errorf("a line per lost EMF line, want the one summary:\n%s", logs.String())
	}
}
