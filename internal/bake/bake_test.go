package bake_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/bake"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

var start = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

// gauges serves a four-instance fleet's openai gauges, as set.
type gauges struct {
	mu     sync.Mutex
	values []int
	down   bool
}

func (g *gauges) set(down bool, values ...int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.values, g.down = values, down
}

func (g *gauges) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		http.Error(w, "gone", http.StatusServiceUnavailable)
		return
	}
	var b strings.Builder
	b.WriteString("# TYPE kosha_breaker_state gauge\n")
	for i, v := range g.values {
		fmt.Fprintf(&b, "kosha_breaker_state{dependency=\"openai\",instance=\"gw-%d\"} %d\n", i+1, v)
	}
	_, _ = w.Write([]byte(b.String()))
}

// cwAlarms reads alarms from the CloudWatch fake through the SDK client.
type cwAlarms struct{ cw *cwfake.Server }

func (a cwAlarms) Describe(ctx context.Context, _ string, q metrics.AlarmQuery) (metrics.AlarmRead, error) {
	return metrics.DescribeAlarms(ctx, a.cw.Client(1), q)
}

type rig struct {
	g     *gauges
	clk   *clocktest.Fake
	watch *bake.Watch
}

func newRig(t *testing.T, values ...int) *rig {
	t.Helper()
	g := &gauges{values: values}
	ts := httptest.NewServer(g)
	t.Cleanup(ts.Close)
	clk := clocktest.NewFake(start)
	src, err := metrics.NewPrometheus([]string{ts.URL + "/metrics"}, metrics.PrometheusOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{g: g, clk: clk, watch: &bake.Watch{Gauges: src, Clock: clk, Share: metrics.DefaultReopenShare, Live: true}}
}

// run bakes openai for period, calling during(poll) before each poll's
// wait ends: the clock moves only when the bake waits on it.
func (r *rig) run(t *testing.T, ctx context.Context, period time.Duration, during func(poll int)) bake.Result {
	t.Helper()
	done := make(chan bake.Result, 1)
	go func() { done <- r.watch.Run(ctx, []string{"openai"}, start, period) }()
	for poll := 1; ; poll++ {
		var res bake.Result
		ended := false
		wait.Until(t, "the bake to wait on the clock or end", func() bool {
			select {
			case res = <-done:
				ended = true
				return true
			default:
				return r.clk.Waiters() > 0
			}
		})
		if ended {
			return res
		}
		if during != nil {
			during(poll)
		}
		r.clk.Advance(metrics.ScrapeBakePoll)
	}
}

func TestAFleetThatHoldsIsHeldAfterTheLastRead(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, 0, 2, 0)
	res := r.run(t, context.Background(), time.Minute, nil)
	if res.Verdict != bake.Held || res.Polls != 13 || res.Elapsed != time.Minute || bake.Err(res, nil) != nil {
		t.Errorf("result %+v, want held after 13 reads over the minute", res)
	}
}

func TestMostInstancesReopenedTrips(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, 0, 0, 0)
	res := r.run(t, context.Background(), 10*time.Minute, func(poll int) {
		if poll == 3 {
			r.g.set(false, 2, 1, 0, 2)
		}
	})
	if res.Verdict != bake.Reopened || res.Polls != 4 || len(res.Tripped) != 1 || !strings.Contains(res.Why, "re-opened on 3 of 4 instances (gw-1, gw-2, gw-4)") {
		t.Errorf("result %+v, want re-opened at the 4th read", res)
	}
}

// Reads that fail end the bake as lost after three in a row; one failed
// read is noise.
func TestASourceGoneLosesTheBake(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, 0, 0, 0)
	res := r.run(t, context.Background(), 10*time.Minute, func(poll int) {
		switch poll {
		case 2:
			r.g.set(true) // the 3rd read fails
		case 3:
			r.g.set(false, 0, 0, 0, 0)
		case 5:
			r.g.set(true, 2, 2, 2, 2) // gone for good (and the fleet re-opened unseen)
		}
	})
	if res.Verdict != bake.Lost || res.Polls != 8 || !strings.Contains(res.Why, "3 reads in a row failed") {
		t.Fatalf("result %+v, want lost at the 8th read", res)
	}
	err := bake.Err(res, nil)
	if exitcode.Of(err) != exitcode.Unavailable || !strings.Contains(err.Error(), "nothing was put back") {
		t.Errorf("Err = %v (exit %d), want exit 5 saying nothing was put back", err, exitcode.Of(err))
	}
}

// The last read failing leaves no evidence for "held".
func TestTheLastReadMustJudge(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, 0, 0, 0)
	res := r.run(t, context.Background(), 20*time.Second, func(poll int) {
		if poll == 4 {
			r.g.set(true)
		}
	})
	if res.Verdict != bake.Lost || !strings.Contains(res.Why, "last read failed") {
		t.Errorf("result %+v, want lost: the read at the end failed", res)
	}
}

func TestInterruptedBake(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, 0, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := r.run(t, ctx, 10*time.Minute, func(poll int) {
		if poll == 2 {
			cancel()
		}
	})
	err := bake.Err(res, nil)
	if res.Verdict != bake.Interrupted || exitcode.Of(err) != exitcode.Interrupted || !strings.Contains(err.Error(), "the clear stands") {
		t.Errorf("result %+v, err %v, want interrupted, the clear standing", res, err)
	}
}

// An alarm in INSUFFICIENT_DATA is bad, as AWS AppConfig counts it: the
// clear is put back, in one transaction with its record naming the
// clear's; an override expired meanwhile is not put back.
func TestAnAlarmWithInsufficientDataPutsBack(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, 0, 0, 0)
	cw := cwfake.New(t)
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-openai-errors", State: "OK", Updated: start})
	r.watch.Alarms, r.watch.AlarmNames = cwAlarms{cw}, []string{"kosha-openai-errors"}
	if err := bake.CheckAlarms(context.Background(), r.watch.Alarms, []string{"kosha-openai-errors", "nope"}); exitcode.Of(err) != exitcode.NotFound {
		t.Errorf("an alarm that does not exist: %v, want exit 3", err)
	}

	ctx := context.Background()
	st := sqlitetest.NewStore(t)
	log := audit.NewLog(st, r.clk, "test")
	if _, _, err := levertest.Force(ctx, st, r.clk, log, levertest.Req{Dependency: "openai", Reason: "INC-9", Actor: "alice", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	cres, co, err := levertest.Clear(ctx, st, r.clk, log, "openai", "bob", "recovered")
	if err != nil {
		t.Fatal(err)
	}
	res := r.run(t, ctx, 10*time.Minute, func(poll int) {
		if poll == 2 {
			cw.SetAlarm(cwfake.Alarm{Name: "kosha-openai-errors", State: "INSUFFICIENT_DATA", Updated: start.Add(time.Minute)})
		}
	})
	if res.Verdict != bake.AlarmBad || !strings.Contains(res.Why, "kosha-openai-errors is INSUFFICIENT_DATA") || len(res.Tripped) != 1 {
		t.Fatalf("result %+v, want the alarm's INSUFFICIENT_DATA to trip", res)
	}
	svc := levertest.Levers(st, r.clk, log)
	cleared := []bake.Cleared{{Dependency: "openai", Record: co.Record, Before: *cres.Before}}
	puts := bake.Rollback(ctx, svc, "carol", res, cleared)
	if len(puts) != 1 || puts[0].Result.Restored == nil || puts[0].Record.RollbackOf != co.Record.ID || puts[0].Event == nil {
		t.Fatalf("put-backs %+v, want openai put back naming the clear", puts)
	}
	if err := bake.Err(res, puts); exitcode.Of(err) != exitcode.RolledBack || !strings.Contains(err.Error(), "openai: its override was put back") {
		t.Errorf("Err = %v (exit %d), want exit 15", err, exitcode.Of(err))
	}
	ov, err := breaker.NewOverrides(st, r.clk).Get(ctx, "openai")
	if err != nil || ov.Reason != "INC-9" || !ov.ExpiresAt.Equal(cres.Before.ExpiresAt) {
		t.Errorf("the override put back: %+v, %v; want INC-9 until %s", ov, err, cres.Before.ExpiresAt)
	}

	// Cleared again, and the bake trips after the override's hour: it
	// would have lapsed, so nothing is put back (exit 1, said).
	cres, co, err = levertest.Clear(ctx, st, r.clk, log, "openai", "bob", "recovered again")
	if err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(2 * time.Hour)
	puts = bake.Rollback(ctx, svc, "carol", res, []bake.Cleared{{Dependency: "openai", Record: co.Record, Before: *cres.Before}})
	if len(puts) != 1 || !puts[0].Result.Expired || puts[0].Record.ID != "" {
		t.Fatalf("put-back of an expired override: %+v, want none", puts)
	}
	if err := bake.Err(res, puts); exitcode.Of(err) != exitcode.Error || !strings.Contains(err.Error(), "expiry has passed") {
		t.Errorf("Err = %v (exit %d), want exit 1 saying the expiry passed", err, exitcode.Of(err))
	}
	if _, err := breaker.NewOverrides(st, r.clk).Get(ctx, "openai"); err == nil {
		t.Error("an expired override was put back")
	}
}
