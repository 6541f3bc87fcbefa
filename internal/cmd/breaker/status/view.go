package status

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Result is the JSON (and YAML) output of status: kind BreakerStatus,
// documented in docs/contracts/breaker-state-metric.md.
type Result struct {
	Kind         string           `json:"kind"`
	Context      string           `json:"context"`
	GeneratedAt  string           `json:"generated_at"`
	Store        StoreView        `json:"store"`
	Gauges       GaugesView       `json:"gauges"`
	Dependencies []DependencyView `json:"dependencies"`
	// Freeze is the fleet's freeze (docs/contracts/freeze.md), null when
	// none is recorded (or the store could not be read).
	Freeze *freeze.View `json:"freeze"`
}

// StoreView says where overrides were read and whether that worked.
type StoreView struct {
	Source string  `json:"source"`
	OK     bool    `json:"ok"`
	Error  *string `json:"error"`
}

// GaugesView says where gauges were read, what window they cover and
// whether that worked.
type GaugesView struct {
	Source        string   `json:"source"`
	OK            bool     `json:"ok"`
	Error         *string  `json:"error"`
	FetchedAt     *string  `json:"fetched_at"`
	WindowStart   *string  `json:"window_start"`
	WindowEnd     *string  `json:"window_end"`
	PeriodSeconds int      `json:"period_seconds"`
	Requests      int      `json:"requests"`
	Metrics       int      `json:"metrics"`
	Warnings      []string `json:"warnings"`
}

// DependencyView is one dependency's merged state.
type DependencyView struct {
	Dependency string                     `json:"dependency"`
	State      metrics.State              `json:"state"`
	GaugeState metrics.State              `json:"gauge_state"`
	Override   *overrideview.OverrideView `json:"override"`
	Gauges     GaugeSummary               `json:"gauges"`
	Instances  []InstanceView             `json:"instances"`
	Timeline   []PointView                `json:"timeline,omitempty"`
	// Fleet judges the override against the gauges (metrics.JudgeStatus);
	// null without an override item.
	Fleet *FleetView `json:"fleet"`
	Notes []string   `json:"notes"`
}

// FleetView says whether the fleet obeys the override: confirmed,
// converging (within the source's bound), not_obeyed (past it, with the
// instances that disagree where the source names them) or unconfirmed.
type FleetView struct {
	Goal               metrics.Goal    `json:"goal"`
	Verdict            metrics.Verdict `json:"verdict"`
	Since              *string         `json:"since"`
	BoundSeconds       float64         `json:"bound_seconds"`
	Instances          int             `json:"instances"`
	InstancesConfirmed int             `json:"instances_confirmed"`
	PerInstance        bool            `json:"per_instance"`
	Stragglers         []string        `json:"stragglers"`
	Unknown            []metrics.Doubt `json:"unknown"`
}

// GaugeSummary is the fleet's newest values.
type GaugeSummary struct {
	HasData            bool           `json:"has_data"`
	Max                *float64       `json:"max"`
	Min                *float64       `json:"min"`
	Worst              *string        `json:"worst"`
	Best               *string        `json:"best"`
	Samples            int            `json:"samples"`
	InstancesReporting int            `json:"instances_reporting"`
	InstancesSeen      int            `json:"instances_seen"`
	ByState            map[string]int `json:"by_state"`
	// Breakdown says whether the instance counts, by_state and instances
	// cover the fleet: complete, partial (CloudWatch truncated or cut it) or
	// not_fetched (CloudWatch without --instances).
	Breakdown metrics.Breakdown `json:"breakdown"`
	LatestAt  *string           `json:"latest_at"`
}

// InstanceView is one instance's newest value.
type InstanceView struct {
	Instance  string  `json:"instance"`
	Value     float64 `json:"value"`
	State     string  `json:"state"`
	LastSeen  *string `json:"last_seen"`
	Reporting bool    `json:"reporting"`
}

// PointView is one timeline period.
type PointView struct {
	Time    string  `json:"time"`
	Max     float64 `json:"max"`
	Min     float64 `json:"min"`
	Samples int     `json:"samples"`
}

func view(s metrics.DependencyStatus, now time.Time, timeline bool) DependencyView {
	v := DependencyView{Dependency: s.Dependency, State: s.State, GaugeState: s.GaugeState,
		Override: overrideview.ViewPtr(s.Override, now), Instances: []InstanceView{}, Notes: append([]string{}, s.Notes...)}
	if f := s.Fleet; f != nil {
		v.Fleet = &FleetView{Goal: f.Goal, Verdict: f.Verdict, Since: cmdutil.TimeOrNil(f.Since), BoundSeconds: f.Bound.Seconds(),
			Instances: f.Instances, InstancesConfirmed: f.Confirmed, PerInstance: f.PerInstance, Stragglers: append([]string{}, f.Stragglers...),
			Unknown: append([]metrics.Doubt{}, f.Unknown...)}
	}
	g := s.Gauges
	v.Gauges = GaugeSummary{HasData: g.HasData, Samples: g.Samples, InstancesReporting: g.Reporting, InstancesSeen: g.Known,
		ByState: map[string]int{}, Breakdown: g.Breakdown, LatestAt: cmdutil.TimeOrNil(g.LatestAt)}
	if g.HasData {
		hi, lo := g.Max, g.Min
		worst, best := stateName(hi), stateName(lo)
		v.Gauges.Max, v.Gauges.Min, v.Gauges.Worst, v.Gauges.Best = &hi, &lo, &worst, &best
	}
	for value, n := range g.ByState {
		v.Gauges.ByState[stateName(float64(value))] = n
	}
	for _, in := range s.Instances {
		v.Instances = append(v.Instances, InstanceView{Instance: in.Instance, Value: in.Value, State: in.State.String(),
			LastSeen: cmdutil.TimeOrNil(in.LastSeen), Reporting: in.Reporting})
	}
	if timeline {
		v.Timeline = make([]PointView, 0, len(s.Timeline))
		for _, p := range s.Timeline {
			v.Timeline = append(v.Timeline, PointView{Time: *cmdutil.TimeOrNil(p.Time), Max: p.Max, Min: p.Min, Samples: p.Samples})
		}
	}
	return v
}

// stateName is a gauge value's breaker state name (closed … forced_open).
func stateName(v float64) string {
	b, ok := metrics.GaugeState(v)
	if !ok {
		return "unknown"
	}
	return b.String()
}
