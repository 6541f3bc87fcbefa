package tui

import (
	"context"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Messages. Every I/O result reaches Update as one of these.
type (
	// refreshTickMsg fires every interval; id tells the live chain from
	// stale ones.
	refreshTickMsg struct{ id int }
	// clockTickMsg redraws countdowns and ages once a second.
	clockTickMsg struct{}
	overridesMsg struct {
		list OverrideList
		err  error
	}
	gaugesMsg struct {
		snap metrics.Snapshot
		err  error
	}
	auditMsg struct {
		dependency string
		records    []audit.Record
		err        error
	}
	forcedMsg struct {
		req ForceRequest
		rep lever.Report
		err error
	}
	clearedMsg struct {
		dependency string
		rep        lever.Report
		err        error
	}
	// fleetMsg is the end of a wait for the gauges to confirm a change.
	fleetMsg struct {
		res metrics.WaitResult
		err error
	}
	// ratesMsg is a read of the fleet's call rates.
	ratesMsg struct {
		rates metrics.CallRates
		err   error
	}
)

// do is a command running op under one operation's context, derived from
// the program's with the operation timeout.
func (m Model) do(op func(ctx context.Context) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.base(), m.opts.timeout)
		defer cancel()
		return op(ctx)
	}
}

func (m Model) loadOverrides() tea.Cmd {
	return m.do(func(ctx context.Context) tea.Msg {
		list, err := m.deps.Overrides.List(ctx)
		return overridesMsg{list: list, err: err}
	})
}

func (m Model) loadGauges() tea.Cmd {
	src, req := m.deps.Gauges, m.gaugeRequest()
	return m.do(func(ctx context.Context) tea.Msg {
		snap, err := src.Fetch(ctx, req)
		return gaugesMsg{snap: snap, err: err}
	})
}

// gaugeRequest asks for every dependency's fleet statistics, and for the
// per-instance breakdown of the one in the detail view only: CloudWatch
// bills one metric per instance series.
func (m Model) gaugeRequest() metrics.FetchRequest {
	req := metrics.FetchRequest{Dependencies: m.fetchDeps(), Window: m.opts.window}
	if m.mode == modeDetail && m.detail.dependency != "" {
		req.Instances = []string{m.detail.dependency}
	}
	return req
}

func (m Model) loadAudit(dep string) tea.Cmd {
	if m.deps.Audit == nil {
		return nil
	}
	return m.do(func(ctx context.Context) tea.Msg {
		l, err := m.deps.Audit.List(ctx, audit.Query{Subject: breaker.OverrideKey(dep), Limit: AuditRecords})
		return auditMsg{dependency: dep, records: l.Records, err: err}
	})
}

// loadRates reads the call rates of every tool and dependency the
// dashboard knows, for the detail's impact, within impact.DefaultTimeout
// (a Prometheus source's first read takes two scrapes a few seconds apart).
func (m *Model) loadRates() tea.Cmd {
	if m.deps.Rates == nil || m.rates.loading {
		return nil
	}
	m.rates.loading = true
	// The detail's dependency first; as many as one CloudWatch request
	// holds beside the tools (a context names a handful).
	deps := m.fetchDeps()
	if i := slices.Index(deps, m.detail.dependency); i > 0 {
		deps = append([]string{deps[i]}, slices.Delete(slices.Clone(deps), i, i+1)...)
	}
	tools := impact.ToolNames()
	deps = deps[:min(len(deps), metrics.MaxQueriesPerRequest-len(tools))]
	src, req := m.deps.Rates, metrics.RateRequest{Tools: tools, Dependencies: deps}
	base := m.base
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base(), impact.DefaultTimeout)
		defer cancel()
		rates, err := src.Rates(ctx, req)
		return ratesMsg{rates: rates, err: err}
	}
}

// ratesDue reports whether the detail's rates should be read: none read
// yet, or the last read is RatesEvery old.
func (m Model) ratesDue() bool {
	return m.deps.Rates != nil && !m.rates.loading && (m.rates.at.IsZero() || m.opts.Clock.Now().Sub(m.rates.at) >= RatesEvery)
}

func (m Model) force(req ForceRequest) tea.Cmd {
	return m.do(func(ctx context.Context) tea.Msg {
		rep, err := m.deps.Overrides.Force(ctx, req)
		return forcedMsg{req: req, rep: rep, err: err}
	})
}

func (m Model) clear(dep, reason string) tea.Cmd {
	return m.do(func(ctx context.Context) tea.Msg {
		rep, err := m.deps.Overrides.Clear(ctx, dep, reason)
		return clearedMsg{dependency: dep, rep: rep, err: err}
	})
}

// waitFleet waits for the gauges to confirm c (metrics.Waiter: the rule and the
// bound of `breaker force-open --wait`) on the program's context, and says so.
func (m *Model) waitFleet(c metrics.Change) tea.Cmd {
	m.status += " · waiting for the fleet (gauges catch up within " + human.Duration(metrics.LagOf(m.deps.Gauges)) + ")"
	w := &metrics.Waiter{Gauges: m.deps.Gauges, Clock: m.opts.Clock}
	base := m.base
	return func() tea.Msg {
		res, err := w.Wait(base(), []metrics.Change{c})
		return fleetMsg{res: res, err: err}
	}
}

// tickOn is tea.Tick on c: a timer message after d of c's time. On the
// wall clock that is tea.Tick; on a fake clock the refresh and the
// countdowns move only when the test advances it, so a test counts one read
// per refresh exactly, however slowly the machine runs.
func tickOn(c clock.Clock) func(time.Duration, func(time.Time) tea.Msg) tea.Cmd {
	return func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return fn(<-clock.After(c, d)) }
	}
}

func (m Model) refreshTick() tea.Cmd {
	id := m.refreshID
	return m.tick(m.opts.Interval, func(time.Time) tea.Msg { return refreshTickMsg{id: id} })
}

func (m Model) clockTick() tea.Cmd {
	return m.tick(time.Second, func(time.Time) tea.Msg { return clockTickMsg{} })
}
