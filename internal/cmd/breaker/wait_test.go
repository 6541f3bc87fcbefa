package breaker_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// fleet is the reference sandbox at the LLD's settings (5 s override
// cache) on the local context's embedded store and the CLI's fake clock.
// It is not started: the test is its override poll, so every instance
// reads the store exactly when the test says and no goroutine of its own
// races the command's scrapes.
type fleet struct {
	srv *sandbox.Server
	url string
	log *audit.Log
	clk interface {
		Now() time.Time
		Advance(time.Duration)
		Waiters() int
	}
}

func startFleet(t *testing.T, e *clitest.Env, ignore ...int) *fleet {
	t.Helper()
	if err := os.MkdirAll(e.StateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(e.StateDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := sandbox.DefaultConfig()
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileInstant)
	cfg.IgnoreOverrides = ignore
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: st, Clock: e.Clock, Logger: slog.New(slog.DiscardHandler), ContextName: "local"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	fl := &fleet{srv: srv, url: ts.URL + sandbox.PathMetrics, log: audit.NewLog(st, e.Clock, "local"), clk: e.Clock}
	fl.sync() // every instance has just read the store: the worst phase for a write
	return fl
}

// sync is one round of the instances' idle poll.
func (fl *fleet) sync() {
	for _, in := range fl.srv.Fleet().Instances() {
		in.SyncOverrides(context.Background())
	}
}

func (fl *fleet) forced(dep string) (n int) {
	for _, in := range fl.srv.Fleet().Instances() {
		if in.BreakerState(dep) == circuit.ForcedOpen {
			n++
		}
	}
	return n
}

// run starts koshactl in the background and drives the clock: a step at a
// time, once the command waits on it; the instances poll every second
// (the LLD's idle poll, a fifth of the cache period), a quarter second
// into each. during, if set, runs while the command waits, at each step.
func (fl *fleet) run(t *testing.T, e *clitest.Env, during func(elapsed time.Duration), args ...string) clitest.Result {
	t.Helper()
	return fl.runContext(t, e, context.Background(), during, args...)
}

// runContext is run with ctx (canceled: SIGINT, as cmd/koshactl delivers it).
func (fl *fleet) runContext(t *testing.T, e *clitest.Env, ctx context.Context, during func(elapsed time.Duration), args ...string) clitest.Result {
	t.Helper()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.RunContext(ctx, args...) }()
	const step = 250 * time.Millisecond
	begin := fl.clk.Now()
	for {
		// The command is writing, or fetching: wait for it to wait on the
		// clock again, or to end.
		var r clitest.Result
		ended := false
		wait.Until(t, "koshactl "+strings.Join(args, " ")+" to wait on the clock or end", func() bool {
			select {
			case r = <-done:
				ended = true
				return true
			default:
				return fl.clk.Waiters() > 0
			}
		})
		if ended {
			return r
		}
		el := fl.clk.Now().Sub(begin)
		if el%time.Second == step {
			fl.sync()
		}
		if during != nil {
			during(el)
		}
		fl.clk.Advance(step)
	}
}

func TestForceOpenWaitReturnsWhenEveryInstanceReportsForced(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.TTY = true
	fl := startFleet(t, e)
	audited := false
	r := fl.run(t, e, func(time.Duration) {
		if audited {
			return
		}
		// The audit record is written before the wait, not after it.
		l, err := fl.log.List(context.Background(), audit.Query{Action: "breaker.force-open"})
		audited = err == nil && len(l.Records) == 1
	}, "breaker", "force-open", "openai", "--reason", "provider incident drill", "--wait", "--metrics-url", fl.url)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !audited {
		t.Error("no force_open audit record while the command was waiting for the fleet")
	}
	if n := fl.forced(sandbox.OpenAI); n != 4 {
		t.Fatalf("%d of 4 instances forced when the command returned", n)
	}
	// The instances read the store again 5 s after their last read, at
	// their next poll (5.25 s); the command's next poll sees all four.
	bound := breaker.CacheTTL + metrics.IdleSync
	if !strings.Contains(r.Stdout, "Forced open openai") || !strings.Contains(r.Stdout, "Confirmed openai: forced on 4 of 4 instances after 5.5s") {
		t.Errorf("stdout does not say the fleet confirmed within %s:\n%s", bound, r.Stdout)
	}
	if !strings.Contains(r.Stderr, "waiting for the fleet: openai forced on 0 of 4 instances") ||
		!strings.Contains(r.Stderr, "gauges catch up within 6s, timeout 11s") || !strings.Contains(r.Stderr, "\r\x1b[K") {
		t.Errorf("stderr has no live progress line:\n%q", r.Stderr)
	}
}

func TestForceOpenWaitJSONAndNoProgressOffATerminal(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fl := startFleet(t, e)
	r := fl.run(t, e, nil, "breaker", "force-open", "openai", "--reason", "provider incident drill", "--wait", "--metrics-url", fl.url, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stderr, "waiting") || strings.Contains(r.Stderr, "\r") {
		t.Errorf("progress written off a terminal:\n%q", r.Stderr)
	}
	out := clitest.Decode[struct {
		Results []struct {
			AuditID string `json:"audit_id"`
		} `json:"results"`
		Convergence struct {
			Confirmed      bool    `json:"confirmed"`
			BoundSeconds   float64 `json:"bound_seconds"`
			TimeoutSeconds float64 `json:"timeout_seconds"`
			Dependencies   []struct {
				Dependency         string   `json:"dependency"`
				Goal               string   `json:"goal"`
				Verdict            string   `json:"verdict"`
				Confirmed          bool     `json:"confirmed"`
				Instances          int      `json:"instances"`
				InstancesConfirmed int      `json:"instances_confirmed"`
				Stragglers         []string `json:"stragglers"`
				TimeToConverge     *float64 `json:"time_to_converge_seconds"`
			} `json:"dependencies"`
		} `json:"convergence"`
	}](t, r.Stdout)
	c := out.Convergence
	if !c.Confirmed || c.BoundSeconds != 6 || c.TimeoutSeconds != 11 || len(c.Dependencies) != 1 || len(out.Results) != 1 || out.Results[0].AuditID == "" {
		t.Fatalf("convergence %+v results %+v", c, out.Results)
	}
	d := c.Dependencies[0]
	if d.Dependency != "openai" || d.Goal != "forced" || d.Verdict != "confirmed" || !d.Confirmed || d.Instances != 4 || d.InstancesConfirmed != 4 ||
		d.Stragglers == nil || len(d.Stragglers) != 0 || d.TimeToConverge == nil || *d.TimeToConverge != 5.5 {
		t.Errorf("dependency convergence %+v, want openai confirmed 4/4 after 5.5s", d)
	}

	// And back: clear --wait confirms once no instance reports forced.
	r = fl.run(t, e, nil, "breaker", "clear", "openai", "--reason", "drill over", "--wait", "--metrics-url", fl.url, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("clear --wait: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	cl := clitest.Decode[struct {
		Convergence struct {
			Confirmed    bool `json:"confirmed"`
			Dependencies []struct {
				Goal           string   `json:"goal"`
				TimeToConverge *float64 `json:"time_to_converge_seconds"`
			} `json:"dependencies"`
		} `json:"convergence"`
	}](t, r.Stdout)
	if !cl.Convergence.Confirmed || cl.Convergence.Dependencies[0].Goal != "released" || *cl.Convergence.Dependencies[0].TimeToConverge > 6 {
		t.Errorf("clear convergence %+v", cl.Convergence)
	}
	if n := fl.forced(sandbox.OpenAI); n != 0 {
		t.Errorf("%d instances still forced after clear --wait returned", n)
	}
}

func TestForceOpenWaitNamesTheInstanceThatIgnoresOverrides(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	fl := startFleet(t, e, 3)
	r := fl.run(t, e, nil, "breaker", "force-open", "openai", "--reason", "provider incident drill", "--wait", "--metrics-url", fl.url)
	if r.Code != exitcode.Unconfirmed {
		t.Fatalf("exit %d, want %d (unconfirmed)\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Unconfirmed, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "did not confirm it within 11s") || !strings.Contains(r.Stderr, "openai forced on 3 of 4 instances, not obeyed (not forced: gw-3)") {
		t.Errorf("stderr does not name gw-3 as not obeying:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stdout, "Forced open openai") || !strings.Contains(r.Stdout, "Not confirmed openai") {
		t.Errorf("stdout:\n%s", r.Stdout)
	}
	// The override stands: the write was made and audited.
	g := e.MustRun(0, "breaker", "get", "openai", "-o", "json")
	if v := clitest.Decode[view](t, g.Stdout); !v.Active {
		t.Errorf("override not active after the wait timed out: %+v", v)
	}
	// breaker status says "not obeyed", past the scrape's bound.
	st := e.MustRun(0, "breaker", "status", "openai", "--metrics-url", fl.url)
	if !strings.Contains(st.Stdout, "not obeyed") || !strings.Contains(st.Stdout, "gw-3") {
		t.Errorf("status does not show openai as not obeyed by gw-3:\n%s", st.Stdout)
	}
	// An explicit --timeout bounds the wait.
	r = fl.run(t, e, nil, "breaker", "force-open", "openai", "--reason", "again", "--overwrite", "--wait", "--timeout", "2s", "--metrics-url", fl.url, "-o", "json")
	if r.Code != exitcode.Unconfirmed || !strings.Contains(r.Stdout, `"timeout_seconds": 2`) || !strings.Contains(r.Stdout, `"stragglers": [`) {
		t.Errorf("--timeout 2s: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestWaitFlagsAreCheckedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, args := range [][]string{
		{"breaker", "force-open", "openai", "--reason", "x", "--timeout", "5s"},
		{"breaker", "force-open", "openai", "--reason", "x", "--wait", "--dry-run"},
		{"breaker", "force-open", "openai", "--reason", "x", "--wait", "--timeout", "-1s"},
		{"breaker", "force-open", "openai", "--reason", "x", "--wait", "--metrics-url", "ftp://nowhere"},
		{"breaker", "clear", "openai", "--instances"},
	} {
		r := e.Run(args...)
		if r.Code != exitcode.Usage {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.Code, r.Stderr)
		}
	}
	if r := e.Run("breaker", "get", "openai"); r.Code != exitcode.NotFound {
		t.Errorf("an override was written by a refused command: %s", r.Stdout)
	}
}

// Issue 21 (probe): SIGINT during --wait printed only "error: context
// canceled": the operator was not told that the override was written and
// audited before the wait (nor what to look at). The interrupt says so.
func TestForceOpenWaitInterruptedSaysTheChangeWasWritten(t *testing.T) {
	e := clitest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var scrapes atomic.Int32
	gauges := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// The first scrapes are the checks before the write: that
		// something serves the gauges, and the impact's call rates (a
		// failed scrape: the impact is the matrix's); the next is the
		// wait's.
		if scrapes.Add(1) > 2 {
			cancel() // SIGINT, as cmd/koshactl delivers it, while the command waits
		}
		http.Error(w, "not yet", http.StatusServiceUnavailable)
	}))
	defer gauges.Close()
	r := e.RunContext(ctx, "breaker", "force-open", "openai", "--reason", "provider incident", "--wait", "--metrics-url", gauges.URL+"/metrics")
	if r.Code != exitcode.Interrupted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, exitcode.Interrupted, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "interrupted while waiting for the fleet") || !strings.Contains(r.Stderr, "was written and audited, its convergence not confirmed") {
		t.Errorf("stderr does not say the change was written before the interrupt:\n%s", r.Stderr)
	}
	// Issue 35: the line ended in Go's "context canceled".
	if strings.Contains(r.Stderr, "context canceled") || strings.Count(r.Stderr, "error:") != 1 {
		t.Errorf("stderr should be one line of koshactl's own words:\n%s", r.Stderr)
	}
	e.MustRun(0, "breaker", "get", "openai")
}

// Issue 35: force-open --wait with no sandbox waited out its 11 s timeout
// after the write and exited 5 without saying the sandbox was down. A
// gauge source on this machine that refuses the connection is refused
// before the write, with the hint, at once.
func TestForceOpenWaitWithoutSandboxFailsFastWithTheHint(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/metrics"
	_ = ln.Close()
	// Bounded, so a command that waits instead fails the test (the fake
	// clock never times the wait out).
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r := e.RunContext(ctx, "breaker", "force-open", "openai", "--reason", "no sandbox", "--wait", "--metrics-url", url)
	want := "error: --wait: nothing serves the gauges at prometheus " + url + " (is the sandbox running? start it with koshactl sandbox); nothing was written\n"
	if r.Code != exitcode.Unavailable || r.Stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 5 and %q", r.Code, r.Stderr, want)
	}
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")
}
