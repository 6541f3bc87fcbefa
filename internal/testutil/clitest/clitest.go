// Package clitest runs koshactl commands in-process, exactly as the binary
// would (real config resolution, real stores), with buffer-backed streams, a
// fake clock and an isolated config and state directory per test.
package clitest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
)

// Epoch is the fixed instant every test's clock starts at.
var Epoch = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

// Env is one isolated koshactl installation.
type Env struct {
	T     testing.TB
	Dir   string
	Clock *clock.Fake
	// Stdin is fed to the next Run; TTY marks stdin/stdout/stderr as terminals.
	Stdin string
	TTY   bool
	// In, when set, is the next Run's stdin instead of Stdin (a reader that
	// blocks, for cancellation tests).
	In io.Reader
}

// New isolates koshactl for the test: KOSHACTL_CONFIG and KOSHACTL_STATE_DIR
// point into a temporary directory, KOSHACTL_ACTOR is "tester@test", and the
// clock starts at [Epoch]. Tests that use it cannot run in parallel (they set
// environment variables).
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{T: t, Dir: t.TempDir(), Clock: clock.NewFake(Epoch)}
	t.Setenv("KOSHACTL_CONFIG", e.ConfigPath())
	t.Setenv("KOSHACTL_STATE_DIR", e.StateDir())
	t.Setenv("KOSHACTL_ACTOR", "tester@test")
	t.Setenv("KOSHACTL_CONTEXT", "")
	t.Setenv("NO_COLOR", "1")
	return e
}

// ConfigPath returns the config file koshactl reads (KOSHACTL_CONFIG); it
// does not exist until a command or [Env.WriteConfig] writes it.
func (e *Env) ConfigPath() string { return filepath.Join(e.Dir, "config.yaml") }

// StateDir returns the state directory (KOSHACTL_STATE_DIR) where the local
// context keeps its embedded store and chaos key.
func (e *Env) StateDir() string { return filepath.Join(e.Dir, "state") }

// PutRaw writes attrs to the local context's embedded store as a hand edit
// would, past every codec of koshactl's domain packages.
func (e *Env) PutRaw(attrs map[string]storetest.Attr) {
	e.T.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(e.StateDir(), "local.db"))
	if err != nil {
		e.T.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	storetest.PutRaw(e.T, s, attrs)
}

// Result is one command's outcome.
type Result struct {
	Stdout string
	Stderr string
	Code   int
}

// Run executes koshactl with args and returns what it printed and its exit code.
func (e *Env) Run(args ...string) Result {
	e.T.Helper()
	return e.RunContext(context.Background(), args...)
}

// RunContext is Run with a caller's context (for cancellation tests).
func (e *Env) RunContext(ctx context.Context, args ...string) Result {
	e.T.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(e.Stdin)
	if e.In != nil {
		ios.In = e.In
	}
	ios.SetStdinTTY(e.TTY)
	ios.SetStdoutTTY(e.TTY)
	ios.SetStderrTTY(e.TTY)
	f := factory.NewWith(ios, e.Clock)
	code := root.Run(ctx, f, args)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// MustRun runs args and fails the test unless the exit code is want.
func (e *Env) MustRun(want int, args ...string) Result {
	e.T.Helper()
	r := e.Run(args...)
	if r.Code != want {
		e.T.Fatalf("koshactl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// WriteConfig writes the config file verbatim.
func (e *Env) WriteConfig(yaml string) {
	e.T.Helper()
	if err := os.WriteFile(e.ConfigPath(), []byte(yaml), 0o600); err != nil {
		e.T.Fatal(err)
	}
}
