package tui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// epoch is every test's "now": mid-minute, so windows align visibly.
var epoch = time.Date(2026, 11, 29, 19, 0, 30, 0, time.UTC)

// fakeOverrides is an in-memory override store with the conflict rules of
// StoreOverrides.
type fakeOverrides struct {
	mu    sync.Mutex
	clock clock.Clock
	items map[string]breaker.Override
	// policySince is the table's policy's since (zero: no policy).
	policySince time.Time
	// errors to return
	listErr, forceErr, clearErr error
	// lostAnswer makes every write's result the domain's answer to a write
	// whose first response was lost and which a re-read resolved.
	lostAnswer bool
	// calls
	lists   int
	forced  []ForceRequest
	cleared []string
}

func newFakeOverrides(clk clock.Clock, items ...breaker.Override) *fakeOverrides {
	f := &fakeOverrides{clock: clk, items: map[string]breaker.Override{}}
	for _, o := range items {
		f.items[o.Dependency] = o
	}
	return f
}

func (f *fakeOverrides) List(context.Context) (OverrideList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return OverrideList{}, f.listErr
	}
	var out []breaker.Override
	for _, o := range f.items {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dependency < out[j].Dependency })
	return OverrideList{Overrides: out, PolicySince: f.policySince}, nil
}

func (f *fakeOverrides) Force(_ context.Context, req ForceRequest) (lever.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forced = append(f.forced, req)
	if f.forceErr != nil {
		return lever.Report{}, f.forceErr
	}
	now := f.clock.Now()
	cur, ok := f.items[req.Dependency]
	active := ok && cur.ActiveAt(now)
	if active && (req.Replace == nil || req.Replace.Version != cur.Version) {
		return lever.Report{}, &breaker.ConflictError{Current: cur, Raced: req.Replace != nil}
	}
	after := breaker.Override{Dependency: req.Dependency, State: breaker.OverrideStateForcedOpen, Reason: req.Reason,
		Actor: "tester@test", CreatedAt: now, ExpiresAt: now.Add(req.For), Version: cur.Version + 1}
	f.items[req.Dependency] = after
	res := breaker.ForceResult{After: after, Replaced: active}
	if ok {
		res.Before = &cur
	}
	return written(req.Dependency, res, f.lostAnswer), nil
}

// written is the report of one target written with result res.
func written(target string, res any, confirmed bool) lever.Report {
	return lever.Report{Outcomes: []lever.Outcome{{Target: target, Result: res, Written: true, Confirmed: confirmed}}}
}

func (f *fakeOverrides) Clear(_ context.Context, dep, _ string) (lever.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleared = append(f.cleared, dep)
	if f.clearErr != nil {
		return lever.Report{}, f.clearErr
	}
	cur, ok := f.items[dep]
	if !ok {
		return lever.Report{Outcomes: []lever.Outcome{{Target: dep, Result: breaker.ClearResult{}, Noop: true}}}, nil
	}
	delete(f.items, dep)
	return written(dep, breaker.ClearResult{Before: &cur, WasActive: cur.ActiveAt(f.clock.Now())}, f.lostAnswer), nil
}

func (f *fakeOverrides) get(dep string) (breaker.Override, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.items[dep]
	return o, ok
}

// fakeGauges serves a fleet whose instances report fixed values.
type fakeGauges struct {
	mu    sync.Mutex
	clock clock.Clock
	// fleet[dependency] = value per instance (gw-1, gw-2, ...)
	fleet    map[string][]float64
	err      error
	calls    int
	asked    [][]string
	requests []metrics.FetchRequest
	// perInstanceCost makes it answer as CloudWatch does: instance series
	// only for the dependencies the request asks them for.
	perInstanceCost bool
	// live makes it answer as a scrape does: current values, judged at once.
	live bool
}

func (g *fakeGauges) Describe() string { return "fake gauges" }

// callCount is how many times Fetch ran (a refresh may still be running).
func (g *fakeGauges) callCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func (g *fakeGauges) set(dep string, values ...float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fleet[dep] = values
}

func (g *fakeGauges) Fetch(_ context.Context, req metrics.FetchRequest) (metrics.Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	g.asked = append(g.asked, req.Dependencies)
	g.requests = append(g.requests, req)
	if g.err != nil {
		return metrics.Snapshot{}, g.err
	}
	snap := fleetSnapshot(g.clock.Now(), req.Window, g.fleet)
	if g.live {
		snap.Live, snap.Lag, snap.StaleAfter = true, metrics.ScrapeLag, time.Minute
		// A scrape reads each instance's value now.
		for dep, s := range snap.Series {
			for i := range s.Instances {
				v := g.fleet[dep][i]
				s.Instances[i].Newest = &metrics.Reading{Value: v, Series: 1, ReadAt: snap.FetchedAt}
				s.Instances[i].LastRead = snap.FetchedAt
			}
		}
	}
	if g.perInstanceCost {
		for dep, s := range snap.Series {
			if !req.WantsInstances(dep) {
				s.Instances, s.Breakdown = nil, metrics.BreakdownNotFetched
				snap.Series[dep] = s
			}
		}
	}
	return snap, nil
}

// fleetSnapshot builds a one-hour history: every instance closed until ten
// minutes ago, then at its value.
func fleetSnapshot(now time.Time, window time.Duration, fleet map[string][]float64) metrics.Snapshot {
	start, end := metrics.Window(now, window, time.Minute)
	snap := metrics.Snapshot{Source: "fake", FetchedAt: now, Start: start, End: end, Period: time.Minute,
		StaleAfter: 5 * time.Minute, Series: map[string]metrics.Series{}, Requests: 1}
	for dep, values := range fleet {
		s := metrics.Series{Dependency: dep}
		for i, v := range values {
			in := metrics.InstanceSeries{Instance: fmt.Sprintf("gw-%d", i+1)}
			for t := start; t.Before(end); t = t.Add(time.Minute) {
				val := 0.0
				if end.Sub(t) <= 10*time.Minute {
					val = v
				}
				in.Points = append(in.Points, metrics.Point{Time: t, Max: val, Min: val, Samples: 1})
			}
			in.LastSeen = in.Points[len(in.Points)-1].Time
			s.Instances = append(s.Instances, in)
		}
		for _, in := range s.Instances {
			for j, p := range in.Points {
				if j >= len(s.Timeline) {
					s.Timeline = append(s.Timeline, p)
					continue
				}
				s.Timeline[j].Max = max(s.Timeline[j].Max, p.Max)
				s.Timeline[j].Min = min(s.Timeline[j].Min, p.Min)
				s.Timeline[j].Samples++
			}
		}
		snap.Series[dep] = s
	}
	return snap
}

type fakeAudit struct {
	mu      sync.Mutex
	records []audit.Record
	err     error
	queries []audit.Query
}

func (a *fakeAudit) List(_ context.Context, q audit.Query) (audit.Listing, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queries = append(a.queries, q)
	if a.err != nil {
		return audit.Listing{}, a.err
	}
	var out []audit.Record
	for _, r := range a.records {
		if r.Subject == q.Subject {
			out = append(out, r)
		}
	}
	return audit.Listing{Records: out}, nil
}

// harness holds a model and its fakes.
type harness struct {
	t      *testing.T
	clock  *clocktest.Fake
	ov     *fakeOverrides
	gauges *fakeGauges
	audit  *fakeAudit
	m      Model
}

// newHarness builds a model on the standard fleet: openai forced by alice,
// postgres mixed, core-api closed, screening-sim silent.
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	clk := clocktest.NewFake(epoch)
	h := &harness{t: t, clock: clk,
		ov: newFakeOverrides(clk, breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen,
			Reason: "provider incident INC-142", Actor: "alice@laptop", CreatedAt: epoch.Add(-3 * time.Minute),
			ExpiresAt: epoch.Add(27 * time.Minute), Version: 1}),
		gauges: &fakeGauges{clock: clk, fleet: map[string][]float64{
			"openai":   {3, 3, 3, 2},
			"postgres": {0, 2, 0, 0},
			"core-api": {0, 0, 0, 0},
		}},
		audit: &fakeAudit{records: []audit.Record{
			{ID: "a1", Time: epoch.Add(-3 * time.Minute), Actor: "alice@laptop", Action: breaker.ActionForceOpen,
				Subject: "breaker#openai", Reason: "provider incident INC-142", Outcome: "ok"},
			{ID: "a0", Time: epoch.Add(-26 * time.Hour), Actor: "bob@laptop", Action: breaker.ActionClear,
				Subject: "breaker#openai", Reason: "recovered", Outcome: "ok"},
		}},
	}
	if opts.ContextName == "" {
		opts.ContextName = "local"
	}
	if opts.Dependencies == nil {
		opts.Dependencies = []string{"core-api", "openai", "postgres", "screening-sim"}
	}
	opts.StoreName = "fake store"
	opts.Clock = clk
	m := New(Deps{Overrides: h.ov, Gauges: h.gauges, Audit: h.audit}, opts)
	m.tick = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	h.m = m
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.run(h.m.Init())
	return h
}

// send feeds msg to the model and runs the commands it leads to.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	nm, cmd := h.m.Update(msg)
	h.m = nm.(Model)
	h.run(cmd)
}

// run executes cmd, and every command the resulting messages lead to, until
// none is left. Timers are disabled in the harness, so every command is I/O
// against the fakes and returns at once.
func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	queue := []tea.Cmd{cmd}
	for n := 0; len(queue) > 0; n++ {
		if n > 1000 {
			h.t.Fatal("commands never settle")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		default:
			nm, next := h.m.Update(msg)
			h.m = nm.(Model)
			queue = append(queue, next)
		}
	}
}

// press types keys: single characters, or names like "enter", "esc", "down".
func (h *harness) press(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

// typeText types text character by character.
func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

func (h *harness) row(dep string) metrics.DependencyStatus {
	h.t.Helper()
	for _, r := range h.m.Rows() {
		if r.Dependency == dep {
			return r
		}
	}
	h.t.Fatalf("no row %s", dep)
	return metrics.DependencyStatus{}
}

var errBoom = errors.New("connection refused")
