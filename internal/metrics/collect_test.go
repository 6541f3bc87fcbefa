package metrics_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

type listOverrides struct {
	items []breaker.Override
	err   error
}

func (l listOverrides) ListForWith(context.Context, []string, []string) ([]breaker.Override, map[string]store.Item, error) {
	return l.items, nil, l.err
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
	c := &metrics.Collector{Overrides: listOverrides{items: []breaker.Override{o}}, Gauges: g, Clock: clocktest.NewFake(now),
		Known: []string{"openai", "postgres"}}

	col := c.Collect(context.Background())
	var names []string
	for _, s := range col.Statuses {
		names = append(names, s.Dependency)
	}
	// The gauges are asked for the known dependencies, without a breakdown,
	// beside the overrides; then for the overridden one the source neither
	// was asked for nor reported. The view adds what the source reported.
	if len(g.asked) != 2 || !slices.Equal(g.asked[0].Dependencies, []string{"openai", "postgres"}) || len(g.asked[0].Instances) != 0 ||
		!slices.Equal(g.asked[1].Dependencies, []string{"legacy-api"}) {
		t.Errorf("fetches asked %+v", g.asked)
	}
	if !slices.Equal(names, []string{"discovered", "legacy-api", "openai", "postgres"}) || col.Snapshot == nil || !col.At.Equal(now) ||
		len(col.Snapshot.Series["legacy-api"].Timeline) != 1 {
		t.Errorf("statuses %v, snapshot %v, at %s", names, col.Snapshot != nil, col.At)
	}

	// Only the named ones, and their breakdown when asked for.
	c.Only, c.AllInstances = []string{"postgres"}, true
	g.asked = nil
	col = c.Collect(context.Background())
	if len(col.Statuses) != 1 || col.Statuses[0].Dependency != "postgres" || !slices.Equal(g.asked[0].Instances, []string{"postgres"}) ||
		c.Breakdowns() != 1 {
		t.Errorf("filtered: %d statuses, asked %+v, %d breakdowns", len(col.Statuses), g.asked[0], c.Breakdowns())
	}

	// A failing store leaves the gauges' part.
	c.Overrides = listOverrides{err: errors.New("store down")}
	col = c.Collect(context.Background())
	if col.StoreErr == nil || col.GaugeErr != nil || len(col.Statuses) != 1 || col.Statuses[0].State != metrics.Closed {
		t.Errorf("store failure: %+v", col)
	}
}

// rendezvous is an override lister and a gauge source that each answer
// only once the other has been asked: a collector that reads one after the
// other never gets both answers.
type rendezvous struct {
	listed, fetched chan struct{}
}

func (r *rendezvous) ListForWith(ctx context.Context, _, _ []string) ([]breaker.Override, map[string]store.Item, error) {
	close(r.listed)
	return nil, nil, r.await(ctx, r.fetched)
}

func (r *rendezvous) Describe() string { return "rendezvous" }

func (r *rendezvous) Fetch(ctx context.Context, _ metrics.FetchRequest) (metrics.Snapshot, error) {
	close(r.fetched)
	return metrics.Snapshot{Series: map[string]metrics.Series{}}, r.await(ctx, r.listed)
}

func (r *rendezvous) await(ctx context.Context, other chan struct{}) error {
	select {
	case <-other:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The overrides and the gauges are read at once: one round trip for both.
func TestCollectorReadsTheTableAndTheGaugesTogether(t *testing.T) {
	r := &rendezvous{listed: make(chan struct{}), fetched: make(chan struct{})}
	ctx, cancel := context.WithTimeout(t.Context(), wait.Ceiling)
	defer cancel()
	col := (&metrics.Collector{Overrides: r, Gauges: r, Clock: clocktest.NewFake(now), Known: []string{"openai"}}).Collect(ctx)
	if col.StoreErr != nil || col.GaugeErr != nil {
		t.Errorf("the table: %v; the gauges: %v; want both read, each while the other was", col.StoreErr, col.GaugeErr)
	}
}
