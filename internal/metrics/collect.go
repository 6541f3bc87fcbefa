package metrics

import (
	"context"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
)

// OverrideLister reads every breaker override item, active or expired, by
// key: the known dependencies' consistently, the others through the
// overrides index; *breaker.Overrides implements it.
type OverrideLister interface {
	ListFor(ctx context.Context, known []string) ([]breaker.Override, error)
}

var _ OverrideLister = (*breaker.Overrides)(nil)

// Collector reads a context's overrides and gauges and merges them into the
// view `koshactl breaker status` prints: fetch, merge, filter.
type Collector struct {
	Overrides OverrideLister
	Gauges    GaugeSource
	Clock     clock.Clock
	// Known are the context's known dependencies, shown even without data.
	Known []string
	// Only, when set, restricts the view to these dependencies (Merge adds
	// every overridden and reported one otherwise).
	Only []string
	// AllInstances asks for every shown dependency's per-instance breakdown
	// (CloudWatch bills one metric per instance series).
	AllInstances bool
	// Window: default [DefaultWindow].
	Window time.Duration
}

// Collection is one [Collector.Collect]: the merged statuses and what each
// source said.
type Collection struct {
	Statuses []DependencyStatus
	// Snapshot is the gauges read; nil when GaugeErr is set.
	Snapshot *Snapshot
	StoreErr error
	GaugeErr error
	// At is when the view was merged.
	At time.Time
}

// Breakdowns is how many dependencies' per-instance breakdowns a collection
// reads: every shown one with AllInstances, none otherwise (the cost model's
// [RefreshCost.Breakdowns]).
func (c *Collector) Breakdowns() int {
	switch {
	case !c.AllInstances:
		return 0
	case len(c.Only) > 0:
		return len(c.Only)
	}
	return len(c.Known)
}

// Collect reads the overrides, then the gauges of the dependencies shown
// and of every overridden one, and merges them. A failing source leaves its
// part empty and its error in the collection.
func (c *Collector) Collect(ctx context.Context) Collection {
	deps := c.Known
	if len(c.Only) > 0 {
		deps = c.Only
	}
	overrides, storeErr := c.Overrides.ListFor(ctx, c.Known)
	ask := slices.Clone(deps)
	for _, o := range overrides {
		ask = append(ask, o.Dependency)
	}
	req := FetchRequest{Dependencies: ask, Window: c.Window}
	if c.AllInstances {
		req.Instances = slices.Clone(deps)
	}
	snap, gaugeErr := c.Gauges.Fetch(ctx, req)
	now := c.Clock.Now()
	col := Collection{StoreErr: storeErr, GaugeErr: gaugeErr, At: now}
	if gaugeErr == nil {
		col.Snapshot = &snap
	}
	col.Statuses = Merge(deps, overrides, col.Snapshot, now)
	if len(c.Only) > 0 {
		col.Statuses = slices.DeleteFunc(col.Statuses, func(s DependencyStatus) bool { return !slices.Contains(c.Only, s.Dependency) })
	}
	return col
}
