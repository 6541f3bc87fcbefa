package freeze_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/status"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// fleet is the reference sandbox, chaos enabled with the local context's
// key, on the local context's store and the CLI's fake clock. The test is
// its override poll (sync): every instance reads the store when told.
type fleet struct {
	srv  *sandbox.Server
	base string
	clk  clitestClock
	// deaf names instances that no longer read the store (cut off from
	// the table): sync leaves them out.
	deaf map[string]bool
}

// clitestClock is what the test drives of the CLI's fake clock.
type clitestClock interface {
	Now() time.Time
	Advance(time.Duration)
	Waiters() int
}

// startFleet starts it; the instances numbered in ignore never read the
// store (the sandbox's ignore-overrides knob).
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
	cfg.ChaosEnabled = true
	cfg.IgnoreOverrides = ignore
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: st, Clock: e.Clock, Keys: keys.NewLocal(e.StateDir()), Logger: slog.New(slog.DiscardHandler),
		ContextName: "local"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	fl := &fleet{srv: srv, base: ts.URL, clk: e.Clock}
	fl.sync()
	return fl
}

func (fl *fleet) sync() {
	for _, in := range fl.srv.Fleet().Instances() {
		if !fl.deaf[in.Name()] {
			in.SyncOverrides(context.Background())
		}
	}
}

// run runs koshactl in the background, driving the clock a quarter second
// at a time once the command waits on it; the instances poll every second.
func (fl *fleet) run(t *testing.T, e *clitest.Env, args ...string) clitest.Result {
	t.Helper()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.Run(args...) }()
	clk := fl.clk
	begin := clk.Now()
	for {
		var r clitest.Result
		ended := false
		wait.Until(t, "koshactl "+strings.Join(args, " ")+" to wait on the clock or end", func() bool {
			select {
			case r = <-done:
				ended = true
				return true
			default:
				return clk.Waiters() > 0
			}
		})
		if ended {
			return r
		}
		if clk.Now().Sub(begin)%time.Second == 250*time.Millisecond {
			fl.sync()
		}
		clk.Advance(250 * time.Millisecond)
	}
}

// screenAll sends one screen_entity call with header to every instance as
// the operator, and counts those the header's error fault deferred.
func (fl *fleet) screenAll(t *testing.T, header string) (deferred int) {
	t.Helper()
	for _, in := range fl.srv.Fleet().Instances() {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": sandbox.ToolScreenEntity, "arguments": map[string]any{"name": "Ada Lovelace"}}})
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, fl.base+sandbox.PathMCP, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer operator-token")
		req.Header.Set(sandbox.HeaderInstance, in.Name())
		req.Header.Set(chaos.HeaderName, header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var rep struct {
			Result struct {
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatalf("screen_entity: %s", raw)
		}
		if rep.Result.StructuredContent["status"] == "deferred" {
			deferred++
		}
	}
	return deferred
}

// headerFaults is kosha_chaos_faults_total{source="header"}, summed.
func (fl *fleet) headerFaults(t *testing.T) float64 {
	t.Helper()
	resp, err := http.Get(fl.base + sandbox.PathMetrics) //nolint:noctx // a test's scrape of its own server
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	sum := 0.0
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			return sum
		} else if err != nil {
			t.Fatal(err)
		}
		if mf.GetName() != "kosha_chaos_faults_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == "header" {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
}

// The scenario, through the CLI, on the sandbox with chaos
// headers: freeze --wait returns once every instance reports the freeze;
// from then no header injects a fault and chaos sign mints nothing; lift
// --wait returns once every instance reports the lift; a header minted
// before the freeze stays ignored after it, one minted after is honoured.
func TestFreezeWaitOnTheSandboxStopsChaosUntilLifted(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	// The fleet's request deadlines are real timers set from its clock:
	// the CLI's fake clock starts at the real time, so they are ahead.
	e.Clock = clocktest.NewFake(time.Now())
	sign := func() string {
		return strings.TrimSpace(e.MustRun(0, "chaos", "sign", "--target", "screening-sim", "--fault", "error", "-o", "value").Stdout)
	}
	before := sign() // the local key, generated on first use
	fl := startFleet(t, e)
	n := len(fl.srv.Fleet().Instances())
	if d := fl.screenAll(t, before); d != n {
		t.Fatalf("before the freeze %d of %d calls with a valid header were deferred", d, n)
	}
	url := fl.base + sandbox.PathMetrics

	r := fl.run(t, e, "freeze", "--reason", "test", "--ref", "INC-1", "--wait", "--metrics-url", url)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Confirmed: frozen on 4 of 4 instances") {
		t.Fatalf("freeze --wait: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	faults := fl.headerFaults(t)
	if d := fl.screenAll(t, before); d != 0 {
		t.Errorf("while frozen, %d calls with a valid header were deferred", d)
	}
	if got := fl.headerFaults(t); got != faults {
		t.Errorf("while frozen the fault counter went from %v to %v", faults, got)
	}
	e.MustRun(exitcode.Refused, "chaos", "sign", "--target", "screening-sim", "--fault", "error")

	r = fl.run(t, e, "freeze", "lift", "--reason", "not us", "--wait", "--metrics-url", url)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Confirmed: unfrozen on 4 of 4 instances") {
		t.Fatalf("freeze lift --wait: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if d := fl.screenAll(t, before); d != 0 || fl.headerFaults(t) != faults {
		t.Errorf("after the lift a header minted before the freeze was honoured (%d deferred)", d)
	}
	after := sign()
	if d := fl.screenAll(t, after); d != n || fl.headerFaults(t) <= faults {
		t.Errorf("after the lift %d of %d calls with a header minted after it were deferred", d, n)
	}
}

// An instance that does not obey is named: cut off from the table after
// the freeze, it keeps refusing headers (its gauge stays 1), so lift
// --wait is not confirmed within its timeout (exit 11) and names it; the
// lift itself was written and is in force for the instances that read it.
func TestFreezeLiftWaitNamesTheInstanceThatDoesNotObey(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.Clock = clocktest.NewFake(time.Now())
	e.MustRun(0, "chaos", "sign", "--target", "screening-sim", "--fault", "error") // the local key
	fl := startFleet(t, e)
	url := fl.base + sandbox.PathMetrics
	if r := fl.run(t, e, "freeze", "--reason", "test", "--ref", "INC-1", "--wait", "--metrics-url", url); r.Code != 0 {
		t.Fatalf("freeze --wait: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	ins := fl.srv.Fleet().Instances()
	deaf := ins[len(ins)-1].Name()
	fl.deaf = map[string]bool{deaf: true}

	r := fl.run(t, e, "freeze", "lift", "--reason", "not us", "--wait", "--metrics-url", url)
	if r.Code != exitcode.Unconfirmed {
		t.Fatalf("freeze lift --wait with %s deaf: exit %d, want %d\n%s\n%s", deaf, r.Code, exitcode.Unconfirmed, r.Stdout, r.Stderr)
	}
	want := fmt.Sprintf("unfrozen on %d of %d instances (still frozen: %s)", len(ins)-1, len(ins), deaf)
	if !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stdout, "Not confirmed: "+want) {
		t.Errorf("freeze lift --wait: want %q named\nstdout:\n%s\nstderr:\n%s", want, r.Stdout, r.Stderr)
	}
	if st := clitest.Decode[status.Result](t, e.MustRun(0, "freeze", "status", "-o", "json").Stdout); st.Frozen || st.Freeze == nil ||
		st.Freeze.State != freeze.StateLifted {
		t.Errorf("the lift was not written before the wait: %+v", st)
	}
}

// An instance that ignores the store (the sandbox's ignore-overrides knob)
// never reports the freeze: freeze --wait exits 11 naming it, the freeze
// written and in force on the others.
func TestFreezeWaitNamesTheInstanceThatIgnoresTheStore(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.Clock = clocktest.NewFake(time.Now())
	e.MustRun(0, "chaos", "sign", "--target", "screening-sim", "--fault", "error") // the local key
	fl := startFleet(t, e, 3)
	r := fl.run(t, e, "freeze", "--reason", "test", "--ref", "INC-1", "--wait", "--metrics-url", fl.base+sandbox.PathMetrics)
	want := "frozen on 3 of 4 instances (not frozen: gw-3)"
	if r.Code != exitcode.Unconfirmed || !strings.Contains(r.Stderr, want) {
		t.Fatalf("freeze --wait with gw-3 ignoring the store: exit %d, want %d naming %q\n%s\n%s", r.Code, exitcode.Unconfirmed, want, r.Stdout, r.Stderr)
	}
	if st := clitest.Decode[status.Result](t, e.MustRun(0, "freeze", "status", "-o", "json").Stdout); !st.Frozen {
		t.Errorf("the freeze was not written before the wait: %+v", st)
	}
}
