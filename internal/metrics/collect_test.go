package metrics_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

type listOverrides struct {
	items []breaker.Override
	err   error
}

func (l listOverrides) ListFor(context.Context, []string) ([]breaker.Override, error) {
	return l.items, l.err
}

type recordGauges struct{ asked []metrics.FetchRequest }

func (g *recordGauges) Describe() string { return "recorded" }

func (g *recordGauges) Fetch(_ context.Context, req metrics.FetchRequest) (metrics.Snapshot, error) {
	g.asked = append(g.asked, req)
	snap := metrics.Snapshot{FetchedAt: now, Period: time.Minute, StaleAfter: 5 * time.Minute, Series: map[string]metrics.Series{}}
	for _, d := range req.Dependencies {
		snap.Series[d] = metrics.Series{Dependency: d, Timeline: []metrics.Point{{Time: now.Truncate(time.Minute), Max: 0, Min: 0, Samples: 2}}}
	}
	snap.Series["discovered"] = metrics.Series{Dependency: "discovered"}
	return snap, nil
}

func TestCollectorFetchesMergesAndFilters(t *testing.T) {
	o := override(time.Minute, time.Hour)
	o.Dependency = "legacy-api"
	g := &recordGauges{}
	c := &metrics.Collector{Overrides: listOverrides{items: []breaker.Override{o}}, Gauges: g, Clock: clock.NewFake(now),
		Known: []string{"openai", "postgres"}}

	col := c.Collect(context.Background())
	var names []string
	for _, s := range col.Statuses {
		names = append(names, s.Dependency)
	}
	// The gauges are asked for the known and the overridden dependencies,
	// without a breakdown; the view adds what the source reported.
	if req := g.asked[0]; !slices.Equal(req.Dependencies, []string{"openai", "postgres", "legacy-api"}) || len(req.Instances) != 0 {
		t.Errorf("fetch asked %+v", req)
	}
	if !slices.Equal(names, []string{"discovered", "legacy-api", "openai", "postgres"}) || col.Snapshot == nil || !col.At.Equal(now) {
		t.Errorf("statuses %v, snapshot %v, at %s", names, col.Snapshot != nil, col.At)
	}

	// Only the named ones, and their breakdown when asked for.
	c.Only, c.AllInstances = []string{"postgres"}, true
	col = c.Collect(context.Background())
	if len(col.Statuses) != 1 || col.Statuses[0].Dependency != "postgres" || !slices.Equal(g.asked[1].Instances, []string{"postgres"}) ||
		c.Breakdowns() != 1 {
		t.Errorf("filtered: %d statuses, asked %+v, %d breakdowns", len(col.Statuses), g.asked[1], c.Breakdowns())
	}

	// A failing store leaves the gauges' part.
	c.Overrides = listOverrides{err: errors.New("store down")}
	col = c.Collect(context.Background())
	if col.StoreErr == nil || col.GaugeErr != nil || len(col.Statuses) != 1 || col.Statuses[0].State != metrics.Closed {
		t.Errorf("store failure: %+v", col)
	}
}
