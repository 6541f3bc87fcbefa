package metrics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// OverrideLister reads every breaker override item, active or expired: the
// known dependencies' consistently by key, the others from the lists index,
// and the items under extra in the same round trip (returned by key, absent
// ones left out); *breaker.Overrides implements it.
type OverrideLister interface {
	ListForWith(ctx context.Context, known, extra []string) ([]breaker.Override, map[string]store.Item, error)
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
	// Extra are keys read with the overrides, in their round trip (the
	// fleet's freeze, which breaker status and diff show): [Collection.Extra].
	Extra []string
}

// Collection is one [Collector.Collect]: the merged statuses and what each
// source said.
type Collection struct {
	Statuses []DependencyStatus
	// Snapshot is the gauges read; nil when GaugeErr is set.
	Snapshot *Snapshot
	StoreErr error
	GaugeErr error
	// Extra are the items under [Collector.Extra], by key (absent ones
	// left out; nil when StoreErr is set).
	Extra map[string]store.Item
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

// Collect reads the overrides and the gauges of the dependencies shown,
// together (one round trip for both), and merges them. An overridden
// dependency the gauges were neither asked for nor reported (one the
// context does not know, on a source that reads only what it is asked:
// CloudWatch) is fetched after, in a second round only then; if that read
// fails the view keeps what the first returned and says so in the
// snapshot's warnings. A failing source leaves its part empty and its error
// in the collection.
func (c *Collector) Collect(ctx context.Context) Collection {
	deps := c.Known
	if len(c.Only) > 0 {
		deps = c.Only
	}
	type listed struct {
		overrides []breaker.Override
		extra     map[string]store.Item
		err       error
	}
	read := make(chan listed, 1)
	go func() {
		o, extra, err := c.Overrides.ListForWith(ctx, c.Known, c.Extra)
		read <- listed{o, extra, err}
	}()
	req := FetchRequest{Dependencies: slices.Clone(deps), Window: c.Window}
	if c.AllInstances {
		req.Instances = slices.Clone(deps)
	}
	snap, gaugeErr := c.Gauges.Fetch(ctx, req)
	l := <-read
	if gaugeErr == nil {
		var more []string
		for _, o := range l.overrides {
			if _, ok := snap.Series[o.Dependency]; !ok && !slices.Contains(more, o.Dependency) {
				more = append(more, o.Dependency)
			}
		}
		if len(more) > 0 {
			extra, err := c.Gauges.Fetch(ctx, FetchRequest{Dependencies: more, Window: c.Window})
			if err != nil {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("the gauges of %s could not be read: %v", strings.Join(more, ", "), err))
			} else {
				snap.add(extra)
			}
		}
	}
	now := c.Clock.Now()
	col := Collection{StoreErr: l.err, GaugeErr: gaugeErr, At: now, Extra: l.extra}
	if gaugeErr == nil {
		col.Snapshot = &snap
	}
	col.Statuses = Merge(deps, l.overrides, col.Snapshot, now)
	if len(c.Only) > 0 {
		col.Statuses = slices.DeleteFunc(col.Statuses, func(s DependencyStatus) bool { return !slices.Contains(c.Only, s.Dependency) })
	}
	return col
}

// add takes another fetch's series, requests and warnings into s.
func (s *Snapshot) add(o Snapshot) {
	if s.Series == nil {
		s.Series = map[string]Series{}
	}
	for k, v := range o.Series {
		if _, ok := s.Series[k]; !ok {
			s.Series[k] = v
		}
	}
	s.Requests += o.Requests
	s.Metrics += o.Metrics
	s.Warnings = append(s.Warnings, o.Warnings...)
}
