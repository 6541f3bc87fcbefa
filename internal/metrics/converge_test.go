package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// scrapeText is a four-instance fleet's openai gauges.
func scrapeText(values ...int) string {
	var b strings.Builder
	b.WriteString("# TYPE kosha_breaker_state gauge\n")
	for i, v := range values {
		fmt.Fprintf(&b, "kosha_breaker_state{dependency=\"openai\",instance=\"gw-%d\"} %d\n", i+1, v)
	}
	return b.String()
}

func TestJudgeScrapeCountsEveryReportingInstance(t *testing.T) {
	clk := clocktest.NewFake(now)
	e, url := serveMetrics(t, scrapeText(3, 3, 3, 0))
	src, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	force := metrics.Change{Dependency: "openai", Goal: metrics.GoalForced, Since: now}
	judge := func(c metrics.Change) metrics.Convergence {
		t.Helper()
		snap, err := src.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}})
		if err != nil {
			t.Fatal(err)
		}
		return metrics.Judge(c, &snap)
	}

	clk.Advance(2 * time.Second)
	cv := judge(force)
	if cv.Verdict != metrics.Converging || cv.Instances != 4 || cv.Confirmed != 3 || !reflect.DeepEqual(cv.Stragglers, []string{"gw-4"}) || !cv.PerInstance {
		t.Errorf("2s after the force, 3 of 4 forced: %+v, want converging 3/4 with gw-4 straggling", cv)
	}
	if cv.Bound != metrics.ScrapeLag || cv.Elapsed != 2*time.Second {
		t.Errorf("bound %s elapsed %s, want %s and 2s", cv.Bound, cv.Elapsed, metrics.ScrapeLag)
	}
	clk.Advance(metrics.ScrapeLag) // past the bound
	if cv := judge(force); cv.Verdict != metrics.NotObeyed || !reflect.DeepEqual(cv.Stragglers, []string{"gw-4"}) {
		t.Errorf("past the bound with gw-4 closed: %+v, want not obeyed by gw-4", cv)
	}
	e.set(scrapeText(3, 3, 3, 3))
	if cv := judge(force); cv.Verdict != metrics.Confirmed || cv.Confirmed != 4 || len(cv.Stragglers) != 0 {
		t.Errorf("all four forced: %+v, want confirmed 4/4", cv)
	}
	clear := metrics.Change{Dependency: "openai", Goal: metrics.GoalReleased, Since: clk.Now()}
	if cv := judge(clear); cv.Verdict != metrics.Converging || cv.Confirmed != 0 {
		t.Errorf("just cleared, all still forced: %+v, want converging 0/4", cv)
	}
	e.set(scrapeText(0, 2, 1, 0))
	if cv := judge(clear); cv.Verdict != metrics.Confirmed || cv.Confirmed != 4 {
		t.Errorf("none forced after the clear (open and half-open are its own states): %+v, want confirmed", cv)
	}
	// Nothing reporting any more: the four known instances stopped, so
	// nothing confirms; past the bound, unconfirmed (each one unknown).
	e.set("# TYPE kosha_breaker_state gauge\n")
	clk.Advance(time.Minute)
	if cv := judge(clear); cv.Verdict != metrics.Unconfirmed || cv.Instances != 4 || cv.Confirmed != 0 || len(cv.Unknown) != 4 {
		t.Errorf("no instance reporting past the bound: %+v, want unconfirmed with 4 unknown", cv)
	}
	// A source that never saw an instance has nothing to judge by.
	_, empty := serveMetrics(t, "# TYPE kosha_breaker_state gauge\n")
	fresh, err := metrics.NewPrometheus([]string{empty}, metrics.PrometheusOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := fresh.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}})
	if err != nil {
		t.Fatal(err)
	}
	if cv := metrics.Judge(metrics.Change{Dependency: "openai", Goal: metrics.GoalReleased, Since: now}, &snap); cv.Verdict != metrics.Unconfirmed || cv.Instances != 0 {
		t.Errorf("nothing ever reported, past the bound: %+v, want unconfirmed with no instance", cv)
	}
}

// publisher models the fleet's EMF publishing into the CloudWatch fake: each
// instance writes its state on every change and at least every minute.
type publisher struct {
	cw    *cwfake.Server
	clk   *clocktest.Fake
	state map[string]float64
	last  map[string]time.Time
}

func (p *publisher) set(instance string, v float64) {
	if cur, ok := p.state[instance]; ok && cur == v {
		return
	}
	p.state[instance] = v
	p.put(instance)
}

func (p *publisher) put(instance string) {
	p.cw.Put("openai", instance, p.clk.Now(), p.state[instance])
	p.last[instance] = p.clk.Now()
}

// tick publishes every instance whose last datum is a minute old.
func (p *publisher) tick() {
	for inst, at := range p.last {
		if p.clk.Now().Sub(at) >= time.Minute {
			p.put(inst)
		}
	}
}

func TestJudgeCloudWatchWaitsForTheNewestCompletePeriod(t *testing.T) {
	start := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(start)
	cw := cwfake.New(t)
	cw.Clock, cw.Delay = clk, cwfake.RetrievalDelay
	pub := &publisher{cw: cw, clk: clk, state: map[string]float64{}, last: map[string]time.Time{}}
	for i := 1; i <= 4; i++ {
		pub.set(fmt.Sprintf("gw-%d", i), 0)
	}
	src := newCW(t, cw, metrics.CloudWatchOptions{Clock: clk})
	clk.Advance(20 * time.Second)
	force := metrics.Change{Dependency: "openai", Goal: metrics.GoalForced, Since: clk.Now()} // 19:00:20
	judge := func(instances bool) metrics.Convergence {
		t.Helper()
		req := metrics.FetchRequest{Dependencies: []string{"openai"}, Window: metrics.WaitWindow}
		if instances {
			req.Instances = []string{"openai"}
		}
		snap, err := src.Fetch(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return metrics.Judge(force, &snap)
	}
	// Three instances apply the force 5 s later; gw-4 ignores it.
	var confirmedAt time.Duration
	for step := 0; step < 60*6; step++ {
		clk.Advance(time.Second)
		if clk.Now().Sub(force.Since) == metrics.OverrideCacheTTL {
			for i := 1; i <= 3; i++ {
				pub.set(fmt.Sprintf("gw-%d", i), 3)
			}
		}
		pub.tick()
		if step%10 != 0 {
			continue
		}
		cv := judge(false)
		if cv.Verdict == metrics.Confirmed {
			confirmedAt = cv.Elapsed
			break
		}
		if cv.Elapsed <= metrics.OverrideLag && cv.Verdict != metrics.Converging {
			t.Fatalf("at %s: %+v, want converging within the bound", cv.Elapsed, cv)
		}
		if cv.Elapsed > metrics.OverrideLag {
			if cv.Verdict != metrics.NotObeyed || cv.Best != 0 || cv.Worst != 3 || cv.PerInstance {
				t.Fatalf("past the bound with gw-4 closed: %+v, want not obeyed (worst forced, best closed) from the fleet statistics", cv)
			}
			if len(cv.Stragglers) != 0 {
				t.Errorf("stragglers %v named without the breakdown", cv.Stragglers)
			}
			named := judge(true)
			if named.Verdict != metrics.NotObeyed || !reflect.DeepEqual(named.Stragglers, []string{"gw-4"}) || named.Instances != 4 || !named.PerInstance {
				t.Fatalf("with the breakdown: %+v, want gw-4 named, 4 instances", named)
			}
			break
		}
	}
	if confirmedAt != 0 {
		t.Fatalf("confirmed after %s although gw-4 never applied the force", confirmedAt)
	}

	// The same fleet, all four obeying: confirmed once the first minute
	// wholly after the cache period (19:01) is complete and readable
	// (19:02 + 2 min), within the bound.
	cw2 := cwfake.New(t)
	clk2 := clocktest.NewFake(start)
	cw2.Clock, cw2.Delay = clk2, cwfake.RetrievalDelay
	pub2 := &publisher{cw: cw2, clk: clk2, state: map[string]float64{}, last: map[string]time.Time{}}
	for i := 1; i <= 4; i++ {
		pub2.set(fmt.Sprintf("gw-%d", i), 0)
	}
	src2 := newCW(t, cw2, metrics.CloudWatchOptions{Clock: clk2})
	clk2.Advance(20 * time.Second)
	force.Since = clk2.Now()
	for step := 0; ; step++ {
		clk2.Advance(time.Second)
		if clk2.Now().Sub(force.Since) == metrics.OverrideCacheTTL {
			for i := 1; i <= 4; i++ {
				pub2.set(fmt.Sprintf("gw-%d", i), 3)
			}
		}
		pub2.tick()
		snap, err := src2.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: metrics.WaitWindow})
		if err != nil {
			t.Fatal(err)
		}
		cv := metrics.Judge(force, &snap)
		if cv.Verdict == metrics.Confirmed {
			want := start.Add(4 * time.Minute) // 19:01 period ends 19:02, readable 19:04
			if !clk2.Now().Equal(want) || cv.Period != start.Add(time.Minute) || cv.Instances < 4 {
				t.Errorf("confirmed at %s by the period %s with %d samples, want at %s by 19:01:00 with at least 4", clk2.Now().Format("15:04:05"), cv.Period.Format("15:04:05"), cv.Instances, want.Format("15:04:05"))
			}
			if cv.Elapsed > metrics.OverrideLag {
				t.Errorf("confirmed after %s, over the bound %s", cv.Elapsed, metrics.OverrideLag)
			}
			break
		}
		if cv.Verdict != metrics.Converging {
			t.Fatalf("at %s: %+v, want converging", cv.Elapsed, cv)
		}
		if step > 600 {
			t.Fatal("never confirmed")
		}
	}
}

// The waiter polls on the clock it is given: a test drives it by advancing
// the fake, never by sleeping.
func TestWaiterReturnsWhenConfirmedOrTimesOut(t *testing.T) {
	clk := clocktest.NewFake(now)
	e, url := serveMetrics(t, scrapeText(0, 0, 0, 0))
	src, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var progress []metrics.WaitProgress
	w := &metrics.Waiter{Gauges: src, Clock: clk, Progress: func(p metrics.WaitProgress) { progress = append(progress, p) }}
	type outcome struct {
		res metrics.WaitResult
		err error
	}
	run := func(c metrics.Change) chan outcome {
		done := make(chan outcome, 1)
		go func() {
			res, err := w.Wait(context.Background(), []metrics.Change{c})
			done <- outcome{res, err}
		}()
		return done
	}
	// drive advances the clock a poll at a time, once the waiter waits on
	// it, calling at(elapsed) before each step, until the wait ends.
	drive := func(done chan outcome, at func(time.Duration)) outcome {
		begin := clk.Now()
		ceiling := time.NewTimer(wait.Ceiling)
		defer ceiling.Stop()
		for {
			// Taken before the check, so a wait that begins after it wakes us.
			changed := clk.WaitersChanged()
			select {
			case o := <-done:
				return o
			default:
			}
			if clk.Waiters() == 0 {
				select {
				case o := <-done:
					return o
				case <-changed:
				case <-ceiling.C:
					t.Fatal("the waiter never waited on the clock")
				}
				continue
			}
			at(clk.Now().Sub(begin))
			clk.Advance(metrics.ScrapeWaitPoll)
		}
	}

	o := drive(run(metrics.Change{Dependency: "openai", Goal: metrics.GoalForced, Since: clk.Now()}), func(el time.Duration) {
		if el == 2500*time.Millisecond {
			e.set(scrapeText(3, 3, 3, 3))
		}
	})
	if o.err != nil || !o.res.Confirmed || o.res.Elapsed != 3*time.Second || o.res.Convergences[0].Elapsed != 3*time.Second {
		t.Fatalf("wait: %+v, %v; want confirmed after 3s", o.res, o.err)
	}
	if last := progress[len(progress)-1]; last.Convergences[0].Confirmed != 4 || last.Bound != metrics.ScrapeLag || last.Timeout != metrics.DefaultWaitTimeout(metrics.ScrapeLag) {
		t.Errorf("last progress %+v", last)
	}

	// gw-2 never obeys: the wait runs out at the default timeout, naming it.
	e.set(scrapeText(3, 0, 3, 3))
	o = drive(run(metrics.Change{Dependency: "openai", Goal: metrics.GoalForced, Since: clk.Now()}), func(time.Duration) {})
	if !errors.Is(o.err, metrics.ErrNotConfirmed) || o.res.Confirmed {
		t.Fatalf("wait on a disobeying instance: %+v, %v; want ErrNotConfirmed", o.res, o.err)
	}
	cv := o.res.Convergences[0]
	if o.res.Elapsed != metrics.DefaultWaitTimeout(metrics.ScrapeLag) || cv.Verdict != metrics.NotObeyed || !reflect.DeepEqual(cv.Stragglers, []string{"gw-2"}) {
		t.Errorf("timed out after %s with %+v; want %s, not obeyed by gw-2", o.res.Elapsed, cv, metrics.DefaultWaitTimeout(metrics.ScrapeLag))
	}
}

func TestDependencyStatusSaysNotObeyedPastTheBound(t *testing.T) {
	clk := clocktest.NewFake(now)
	_, url := serveMetrics(t, scrapeText(3, 3, 0, 3))
	src, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ov := override(0, time.Hour)
	status := func() metrics.DependencyStatus {
		snap, err := src.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}})
		if err != nil {
			t.Fatal(err)
		}
		return metrics.Merge([]string{"openai"}, []breaker.Override{ov}, &snap, clk.Now())[0]
	}
	clk.Advance(3 * time.Second)
	if st := status(); st.Fleet == nil || st.Fleet.Verdict != metrics.Converging || !strings.Contains(strings.Join(st.Notes, ";"), "catch up within 6s") {
		t.Errorf("3s after the force: fleet %+v notes %q, want converging within the scrape's 6s", st.Fleet, st.Notes)
	}
	clk.Advance(5 * time.Second)
	st := status()
	if st.Fleet == nil || st.Fleet.Verdict != metrics.NotObeyed || !strings.Contains(strings.Join(st.Notes, ";"), "not obeyed by gw-3") {
		t.Errorf("8s after the force: fleet %+v notes %q, want not obeyed by gw-3", st.Fleet, st.Notes)
	}
}

// deadlineRecorder records the deadline of each scrape request's context,
// as time left when the request was sent.
type deadlineRecorder struct {
	mu   sync.Mutex
	left []time.Duration
	none int // requests without a deadline
}

func (d *deadlineRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	dl, ok := req.Context().Deadline()
	d.mu.Lock()
	if ok {
		d.left = append(d.left, time.Until(dl))
	} else {
		d.none++
	}
	d.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// Issue 35: a hanging metrics endpoint carried `--timeout 8s` 2.7 s past
// its end (the scrape ran on the client's own 5 s). Each scrape's context
// ends by the wait's deadline: the one sent 10 ms before it has at most
// 10 ms, and the hanging endpoint sees its request canceled.
func TestWaiterBoundsEachScrapeByItsDeadline(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(now)
	const lastPoll = 7990 * time.Millisecond
	canceled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if clk.Now().Sub(now) < lastPoll {
			fmt.Fprint(w, scrapeText(0, 0, 0, 0))
			return
		}
		<-r.Context().Done() // hangs until the scrape gives up
		close(canceled)
	}))
	t.Cleanup(srv.Close)
	rec := &deadlineRecorder{}
	src, err := metrics.NewPrometheus([]string{srv.URL + "/metrics"},
		metrics.PrometheusOptions{Clock: clk, Client: &http.Client{Timeout: 5 * time.Second, Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	w := &metrics.Waiter{Gauges: src, Clock: clk, Timeout: 8 * time.Second, Poll: lastPoll}
	type outcome struct {
		res metrics.WaitResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := w.Wait(context.Background(), []metrics.Change{{Dependency: "openai", Goal: metrics.GoalForced, Since: now}})
		done <- outcome{res, err}
	}()
	var o outcome
	for ended := false; !ended; {
		changed := clk.WaitersChanged()
		select {
		case o = <-done:
			ended = true
			continue
		default:
		}
		if clk.Waiters() == 0 {
			select {
			case o = <-done:
				ended = true
			case <-changed:
			case <-time.After(wait.Ceiling):
				t.Fatal("the waiter never waited on the clock")
			}
			continue
		}
		// To the next poll: the last one 10 ms before the deadline, then
		// the deadline.
		clk.Advance(min(lastPoll, now.Add(8*time.Second).Sub(clk.Now())))
	}
	// The handler hears of the cancellation a moment after the waiter
	// gives up (on a loaded machine, a long moment): wait for that state.
	select {
	case <-canceled:
	case <-time.After(wait.Ceiling):
		t.Error("the hanging endpoint never saw its request canceled")
	}
	if !errors.Is(o.err, metrics.ErrNotConfirmed) || !errors.Is(o.err, context.DeadlineExceeded) || o.res.Elapsed != 8*time.Second || o.res.Polls != 2 {
		t.Errorf("wait = %+v, %v; want not confirmed after 8s and 2 polls, the last one cut at the deadline", o.res, o.err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.none != 0 || len(rec.left) != 2 || rec.left[0] > 8*time.Second || rec.left[1] > 10*time.Millisecond {
		t.Errorf("time left to each scrape = %v (%d without a deadline), want at most 8s, then at most the 10ms left to the wait", rec.left, rec.none)
	}
}
