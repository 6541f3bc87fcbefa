package tui

import (
	"context"
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// benchModel builds the benchmark's fleet, 200 dependencies x 8 instances:
// a quarter of them mixed, one in ten forced by an override.
func benchModel(b *testing.B, width, height int, color bool) (Model, *fakeOverrides, *fakeGauges) {
	b.Helper()
	clk := clocktest.NewFake(epoch)
	ov := newFakeOverrides(clk)
	g := &fakeGauges{clock: clk, fleet: map[string][]float64{}}
	var deps []string
	for i := range 200 {
		dep := fmt.Sprintf("dependency-%03d", i)
		deps = append(deps, dep)
		values := make([]float64, 8)
		if i%4 == 0 {
			values[i%8] = 2
		}
		g.fleet[dep] = values
		if i%10 == 0 {
			ov.items[dep] = breaker.Override{Dependency: dep, State: breaker.OverrideStateForcedOpen, Reason: "bench INC-1",
				Actor: "arn:aws:sts::123456789012:assumed-role/Oncall/alice", CreatedAt: epoch.Add(-time.Minute),
				ExpiresAt: epoch.Add(time.Hour), Version: 1}
		}
	}
	m := New(Deps{Overrides: ov, Gauges: g, Audit: &fakeAudit{}}, Options{ContextName: "prod-eu", Protected: true,
		Dependencies: deps, Clock: clk, Color: color, StoreName: "dynamodb kosha-control"})
	m.tick = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	nm, _ := m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m = nm.(Model)
	list, _ := ov.List(context.Background())
	nm, _ = nm.(Model).Update(overridesMsg{list: list})
	snap, _ := g.Fetch(context.Background(), metrics.FetchRequest{Dependencies: deps, Window: time.Hour})
	nm, _ = nm.(Model).Update(gaugesMsg{snap: snap})
	return nm.(Model), ov, g
}

// BenchmarkView is the cost of one frame with 200 dependencies x 8
// instances (target: under 2 ms).
func BenchmarkView(b *testing.B) {
	for _, tc := range []struct {
		name          string
		width, height int
		color         bool
	}{{"80x24", 80, 24, true}, {"80x24-no-color", 80, 24, false}, {"200x60", 200, 60, true}} {
		b.Run(tc.name, func(b *testing.B) {
			m, _, _ := benchModel(b, tc.width, tc.height, tc.color)
			if len(m.rows) != 200 {
				b.Fatalf("rows = %d", len(m.rows))
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkDetailView is one frame of a dependency's detail (8 instances).
func BenchmarkDetailView(b *testing.B) {
	m, _, _ := benchModel(b, 120, 40, true)
	nm, _ := m.Update(keyMsg("enter"))
	m = nm.(Model)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// BenchmarkMerge is the work done when new data arrives: merging 200
// dependencies x 8 instances with the overrides and placing the timelines.
func BenchmarkMerge(b *testing.B) {
	m, _, _ := benchModel(b, 80, 24, true)
	b.ReportAllocs()
	for b.Loop() {
		m.rebuild()
	}
}

// BenchmarkRefresh counts the reads one refresh makes: one store read batch
// (a single List, i.e. one prefix scan) and one gauge fetch, whatever the
// number of dependencies.
func BenchmarkRefresh(b *testing.B) {
	m, ov, g := benchModel(b, 80, 24, true)
	lists, fetches := ov.lists, g.calls
	b.ReportAllocs()
	for b.Loop() {
		nm, cmd := m.Update(keyMsg("r"))
		m = nm.(Model)
		for _, c := range cmd().(tea.BatchMsg) {
			nm, _ = m.Update(c())
			m = nm.(Model)
		}
	}
	b.ReportMetric(float64(ov.lists-lists)/float64(b.N), "store-reads/refresh")
	b.ReportMetric(float64(g.calls-fetches)/float64(b.N), "gauge-fetches/refresh")
}
