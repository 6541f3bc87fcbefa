package gameday

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Dependencies are the dependencies a run touched: those of its override
// levers and breaker steps, and those its gauge samples name. The report
// shows their breaker_state.
func Dependencies(j *drill.Journal) []string {
	var deps []string
	add := func(d string) {
		if d != "" && !slices.Contains(deps, d) {
			deps = append(deps, d)
		}
	}
	for _, rb := range j.Rollbacks {
		if rb.Lever != nil {
			add(rb.Lever.Dependency)
		}
	}
	for _, s := range j.Steps {
		add(s.Outputs["dependency"])
	}
	for _, s := range j.GaugeSamples {
		add(s.Dependency)
	}
	slices.Sort(deps)
	return deps
}

// FetchSamples reads the run's window from a gauge source, for a journal
// that recorded no samples: the breaker_state of [Dependencies] from a
// period before the run started to now, every instance, as samples at
// the start of each period inside the run's span (its start to its last
// record). A source without history (a Prometheus scrape reports the
// present) yields no sample for a run in the past; that is not an error.
func FetchSamples(ctx context.Context, src metrics.GaugeSource, j *drill.Journal, now time.Time) ([]drill.GaugeSample, error) {
	deps := Dependencies(j)
	if len(deps) == 0 {
		return nil, nil
	}
	window := now.Sub(j.StartedAt) + metrics.DefaultPeriod
	snap, err := src.Fetch(ctx, metrics.FetchRequest{Dependencies: deps, Window: window, AllInstances: true})
	if err != nil {
		return nil, fmt.Errorf("fetch breaker gauges from %s: %w", src.Describe(), err)
	}
	from, to := j.StartedAt.Add(-snap.Period), lastRecord(j, true)
	in := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	out := []drill.GaugeSample{}
	for _, dep := range deps {
		series := snap.Series[dep]
		byTime := map[time.Time]*drill.GaugeSample{}
		var times []time.Time
		sample := func(t time.Time) *drill.GaugeSample {
			if s, ok := byTime[t]; ok {
				return s
			}
			times = append(times, t)
			byTime[t] = &drill.GaugeSample{At: t.UTC(), Dependency: dep, Instances: []drill.InstanceSample{}}
			return byTime[t]
		}
		add := func(instance string, points []metrics.Point) {
			for _, p := range points {
				if st, ok := metrics.GaugeState(p.Max); ok && in(p.Time) {
					s := sample(p.Time)
					s.Instances = append(s.Instances, drill.InstanceSample{Instance: instance, State: st.String()})
				}
			}
		}
		for _, inst := range series.Instances {
			add(inst.Instance, inst.Points)
		}
		if len(series.Instances) == 0 { // no instance dimension: the fleet's worst
			add("fleet (worst)", series.Timeline)
		}
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		for _, t := range times {
			out = append(out, *byTime[t])
		}
	}
	return out, nil
}
