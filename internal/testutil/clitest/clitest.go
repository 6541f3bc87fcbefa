// Package clitest runs koshactl commands in-process, exactly as the binary
// would (real config resolution, real stores), with buffer-backed streams, a
// fake clock and an isolated config and state directory per test.
package clitest

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/factory/base"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Epoch is the fixed instant every test's clock starts at.
var Epoch = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

// Env is one isolated koshactl installation.
type Env struct {
	T     testing.TB
	Dir   string
	Clock *clocktest.Fake
	// Stdin is fed to the next Run; TTY marks stdin/stdout/stderr as terminals.
	Stdin string
	TTY   bool
	// In, when set, is the next Run's stdin instead of Stdin (a reader that
	// blocks, for cancellation tests).
	In io.Reader
	// Out, when set, is the next Run's stdout instead of the captured
	// buffer (a writer that fails, as a closed pipe does).
	Out io.Writer

	parallel bool
	mu       sync.Mutex
	vars     map[string]string
	// base is each variable's process value when vars last set it: a
	// variable the test changed since with t.Setenv (sequential tests only)
	// takes the process value.
	base map[string]procVar
}

type procVar struct {
	value string
	set   bool
}

// An Option changes what [New] sets up.
type Option func(*Env)

// Parallel is for a test that runs in parallel (it has called t.Parallel,
// or its parent has): New then keeps the CLI's environment out of the
// process, and the variables reach koshactl only through its factory
// ([base.WithEnviron]). Without it New calls t.Setenv, which the testing
// package forbids in a parallel test. Such a test sets a variable for its
// CLI with [Env.Setenv], never t.Setenv.
func Parallel() Option { return func(e *Env) { e.parallel = true } }

// New isolates koshactl for the test: KOSHACTL_CONFIG and KOSHACTL_STATE_DIR
// point into a temporary directory, KOSHACTL_ACTOR is "tester@test",
// KOSHACTL_CONTEXT is empty, NO_COLOR is set, and the clock starts at
// [Epoch]. The CLI reads these through its factory's environment, the
// process environment beneath them.
//
// Without [Parallel], New also sets them in the process environment
// (t.Setenv), for tests that build a factory of their own or set a variable
// with t.Setenv after New (which then wins over New's value); such tests
// cannot run in parallel.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	e := &Env{T: t, Clock: clocktest.NewFake(Epoch), vars: map[string]string{}, base: map[string]procVar{}}
	for _, o := range opts {
		o(e)
	}
	e.Dir = t.TempDir()
	e.Setenv("KOSHACTL_CONFIG", e.ConfigPath())
	e.Setenv("KOSHACTL_STATE_DIR", e.StateDir())
	e.Setenv("KOSHACTL_ACTOR", "tester@test")
	e.Setenv("KOSHACTL_CONTEXT", "")
	e.Setenv("NO_COLOR", "1")
	return e
}

// Setenv sets an environment variable for this installation's commands
// (and, without [Parallel], for the process, as t.Setenv).
func (e *Env) Setenv(key, value string) {
	e.T.Helper()
	if !e.parallel {
		e.T.Setenv(key, value)
	}
	v, set := os.LookupEnv(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.vars[key] = value
	e.base[key] = procVar{value: v, set: set}
}

// Environ is the environment this installation's commands read: the
// process's with the variables New and [Env.Setenv] set.
func (e *Env) Environ() cmdutil.Environ {
	return func() []string {
		e.mu.Lock()
		defer e.mu.Unlock()
		list := os.Environ()
		for k, v := range e.vars {
			cur, set := os.LookupEnv(k)
			if b := e.base[k]; cur != b.value || set != b.set {
				continue // the test changed it with t.Setenv since: the process value wins
			}
			list = append(list, k+"="+v)
		}
		return list
	}
}

// Factory returns the production factory on ios with this installation's
// clock and environment, for tests that drive a command past [Env.Run].
func (e *Env) Factory(ios *iostreams.IOStreams) *cmdenv.Factory {
	return factory.NewWith(ios, e.Clock, base.WithEnviron(e.Environ()))
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
	if e.Out != nil {
		ios.Out = e.Out
	}
	ios.SetStdinTTY(e.TTY)
	ios.SetStdoutTTY(e.TTY)
	ios.SetStderrTTY(e.TTY)
	code := root.Run(ctx, e.Factory(ios), args)
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

// UseDynamoDB adds the context "dev" on table at a DynamoDB-API test server
// (moto) with the static test credentials and selects it; flags are
// added to set-context (--dependencies a,b for example). The table is not
// created: run "store init" for that.
func (e *Env) UseDynamoDB(endpoint, table string, flags ...string) {
	e.T.Helper()
	args := append([]string{"config", "set-context", "dev", "--table", table, "--region", moto.Region,
		"--endpoint-url", endpoint, "--static-credentials", "--use"}, flags...)
	e.MustRun(0, args...)
}

// Decode parses a command's JSON output into a T, failing the test when it
// is not JSON of that shape.
func Decode[T any](t testing.TB, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
	return v
}
