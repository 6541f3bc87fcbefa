package tui

import (
	"context"
	"github.com/kosha-platform/koshactl/internal/lever"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Overrides reads and changes the store's breaker overrides. Force and Clear
// are audited. [StoreOverrides] implements it on a real store.
type Overrides interface {
	// List returns every override item, active or expired, and the table's
	// policy's since, in one store read.
	List(ctx context.Context) (OverrideList, error)
	Force(ctx context.Context, req ForceRequest) (lever.Report, error)
	Clear(ctx context.Context, dependency, reason string) (lever.Report, error)
}

// OverrideList is one read of the overrides.
type OverrideList struct {
	Overrides []breaker.Override
	// PolicySince is when the table first had a change policy (zero when
	// it has none, or it cannot be read): an override written since then
	// without an approval is marked UNAPPROVED (policy.UnapprovedAt).
	PolicySince time.Time
	// Freeze is the fleet's freeze, read in the same batch (nil: none
	// recorded): the header's banner while it holds.
	Freeze *freeze.Freeze
}

// ForceRequest is a force-open typed into the dashboard.
type ForceRequest struct {
	Dependency string
	Reason     string
	For        time.Duration
	// Replace is the active override the operator saw and agreed to replace;
	// nil when there was none. A different active override is a conflict.
	Replace *breaker.Override
}

// AuditLister lists audit records; *audit.Log implements it.
type AuditLister interface {
	List(ctx context.Context, q audit.Query) (audit.Listing, error)
}

// Deps are the dashboard's data sources.
type Deps struct {
	Overrides Overrides
	Gauges    metrics.GaugeSource
	Audit     AuditLister
	// Requests lists and decides the table's change requests (the p
	// pane); nil hides it.
	Requests Requests
	// Rates reads the fleet's call rates for the detail's impact: the
	// read the dashboard's changes record (the context's impact
	// assessor's, gaugeenv.LiveRates); nil shows the impact from the
	// degradation matrix alone.
	Rates impact.RateSource
}

// Defaults of [Options].
const (
	DefaultInterval = 10 * time.Second
	// AuditRecords is how many audit records the detail view shows.
	AuditRecords = 6
	// RatesEvery is how often the detail's call rates are read again
	// while it is shown: the rates are calls a minute, and on CloudWatch
	// each read is a request.
	RatesEvery = time.Minute
)

// Options configure the dashboard. Zero values take the documented defaults.
type Options struct {
	// ContextName and Protected describe the context acted on; force and
	// clear on a protected context ask for its name to be typed.
	ContextName string
	Protected   bool
	// StoreName describes the store (its Describe()).
	StoreName string
	// Dependencies are the context's known dependencies, shown even without
	// data. Others appear when an override or a gauge names them.
	Dependencies []string
	// Interval between refreshes; default [DefaultInterval].
	Interval time.Duration
	// MaxOverride caps a force-open's duration (the context's
	// max-override); default breaker.DefaultMaxOverride. The rule is
	// breaker.DurationPolicy's.
	MaxOverride time.Duration
	// Clock: default the wall clock.
	Clock clock.Clock
	// Color enables color (off under NO_COLOR).
	Color bool
	// Notice is shown in the status line at start (a cost warning).
	Notice string
	// GaugesHint is added to the gauges' error banner, e.g. how to start the
	// local sandbox the default source scrapes.
	GaugesHint string
	// Windows, when set, says which planned windows of a levers file are in
	// force or next at an instant (one line each, soonest first; the
	// levers domain's rule): shown under the sources' line.
	Windows func(now time.Time) []string
	// WaitFleet makes a force or clear wait for the gauges to confirm it
	// (metrics.Waiter, the same rule as --wait) and report the verdict in
	// the status line.
	WaitFleet bool

	// window is the timeline's span (metrics.DefaultWindow) and timeout
	// bounds each read or write (the interval, at least 5 s): set by
	// withDefaults, never by a caller.
	window, timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	o.window = metrics.DefaultWindow
	o.timeout = max(o.Interval, 5*time.Second)
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}
