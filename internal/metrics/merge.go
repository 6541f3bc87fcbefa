package metrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/human"
)

// The terms of [OverrideLag].
const (
	// OverrideCacheTTL is how long an instance may keep using the override it
	// read last (the data plane's refresh interval).
	OverrideCacheTTL = breaker.CacheTTL
	// PublishPeriod is the longest an instance goes without reporting the
	// gauge (the contract: on every change and at least every 60 s).
	PublishPeriod = time.Minute
	// RetrievalDelay is how long CloudWatch may take before a published
	// datapoint can be read (AWS documents up to two minutes).
	RetrievalDelay = 2 * time.Minute
)

// OverrideLag is how long the gauges may take to show an override change,
// the bound of "gauges catch up within": the instance applies it within
// OverrideCacheTTL and reports the change at once, but the newest period
// still holds the values from before, so the fleet reads forced only once a
// period without them (DefaultPeriod, up to a whole minute away) has its
// first datapoint (up to PublishPeriod into it) and that datapoint can be
// read (RetrievalDelay): 5 s + 60 s + 60 s + 2 min = 4m05s.
const OverrideLag = OverrideCacheTTL + DefaultPeriod + PublishPeriod + RetrievalDelay

// Gauges summarize a dependency's gauges at the newest period.
type Gauges struct {
	// HasData is false when no value is recent enough to trust.
	HasData bool
	// Max is the worst state value (the highest), Min the best.
	Max, Min float64
	// Samples is the number of values in the newest period.
	Samples int
	// Reporting counts instances with a recent value; Known counts every
	// instance seen in the window (zero without the instance dimension or
	// when the breakdown was not fetched).
	Reporting, Known int
	// ByState counts reporting instances by their newest value (index: the
	// gauge value 0..3); with a partial breakdown, of the instances returned.
	ByState [4]int
	// Breakdown says whether the instance counts cover the whole fleet;
	// BreakdownNote says why not.
	Breakdown     Breakdown
	BreakdownNote string
	// LatestAt is the start of the newest period with data (CloudWatch) or
	// the newest scrape (Prometheus).
	LatestAt time.Time
}

// InstanceStatus is one instance's newest value.
type InstanceStatus struct {
	Instance string
	Value    float64
	State    gauge.State
	LastSeen time.Time
	// Reporting is false when the instance stopped reporting within the
	// window (it keeps its last value for the record).
	Reporting bool
	Timeline  []Point
}

// DependencyStatus is the merged view of one dependency: what the store says
// (the override) and what the fleet reports (the gauges).
type DependencyStatus struct {
	Dependency string
	// State is what to believe: Forced while an override is active,
	// otherwise the gauges' state.
	State State
	// GaugeState is the gauges' state alone.
	GaugeState State
	// Override is the stored override item, active or expired; nil if none.
	Override *breaker.Override
	// OverrideActive reports whether Override is in force at the merge time.
	OverrideActive bool
	Gauges         Gauges
	Instances      []InstanceStatus
	// Timeline is the fleet's view over the window, oldest first.
	Timeline []Point
	// Fleet judges the override against the gauges ([JudgeStatus]):
	// confirmed, converging (within the source's bound), not obeyed (past
	// it, some instance disagrees) or unconfirmed. Nil when there is no
	// override item to judge (or no gauges).
	Fleet *Convergence
	// Notes say where the store and the gauges disagree, and why.
	Notes []string
}

// Merge combines overrides and a gauge snapshot into one status per
// dependency: every name in deps, every dependency with an override item,
// and every dependency the snapshot reports, sorted by name. snap may be
// nil (no gauges yet).
func Merge(deps []string, overrides []breaker.Override, snap *Snapshot, now time.Time) []DependencyStatus {
	names := map[string]bool{}
	for _, d := range deps {
		names[d] = true
	}
	byDep := map[string]*breaker.Override{}
	for i := range overrides {
		o := &overrides[i]
		byDep[o.Dependency] = o
		names[o.Dependency] = true
	}
	if snap != nil {
		for d := range snap.Series {
			names[d] = true
		}
	}
	out := make([]DependencyStatus, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		var series Series
		var ok bool
		if snap != nil {
			series, ok = snap.Series[name]
		}
		st := DependencyStatus{Dependency: name, Override: byDep[name]}
		if ok {
			st.Timeline = series.Timeline
			st.Gauges, st.Instances = summarize(series, snap)
		}
		st.GaugeState = gaugeState(st.Gauges)
		st.OverrideActive = st.Override != nil && st.Override.ActiveAt(now)
		st.State = st.GaugeState
		if st.OverrideActive {
			st.State = Forced
		}
		st.Fleet = JudgeStatus(st, snap)
		st.Notes = notes(st, now, snap.lag())
		out = append(out, st)
	}
	return out
}

// summarize reads a series' newest values. Worst, best and samples come
// from the newest fleet point, never from the instance series (which may be
// a truncated subset), unless the timeline itself was derived from the
// instances (a scrape, whose instances are current and complete).
func summarize(s Series, snap *Snapshot) (Gauges, []InstanceStatus) {
	g := Gauges{Breakdown: s.Breakdown, BreakdownNote: s.BreakdownNote}
	instances := make([]InstanceStatus, 0, len(s.Instances))
	fromInstances := s.TimelineFromInstances
	for _, in := range s.Instances {
		last, ok := in.Latest()
		if !ok {
			continue
		}
		value, _ := in.Current()
		seen := in.LastSeen
		if seen.IsZero() {
			seen = last.Time
		}
		state, isState := GaugeState(value)
		is := InstanceStatus{Instance: in.Instance, Value: value, State: state, LastSeen: seen, Timeline: in.Points,
			Reporting: snap.FetchedAt.Sub(seen) <= snap.StaleAfter}
		g.Known++
		if is.Reporting {
			g.Reporting++
			if isState {
				g.ByState[state]++
			}
			if fromInstances {
				if !g.HasData || value > g.Max {
					g.Max = value
				}
				if !g.HasData || value < g.Min {
					g.Min = value
				}
				g.HasData = true
				if seen.After(g.LatestAt) {
					g.LatestAt = seen
				}
			}
		}
		instances = append(instances, is)
	}
	if p, ok := fleetNow(s.Timeline, snap); ok {
		g.Samples = p.Samples
		if !fromInstances || g.Known == 0 {
			g.HasData, g.Max, g.Min, g.LatestAt = true, p.Max, p.Min, p.Time
		}
	}
	sort.Slice(instances, func(i, j int) bool { return instances[i].Instance < instances[j].Instance })
	return g, instances
}

// fleetNow is the fleet's current values: the newest period, if no older
// than the snapshot allows, combined with every period overlapping the
// snapshot's FleetLookback before the fetch (largest Max, smallest Min, the
// largest SampleCount as the number reporting; Time is the newest period's
// start). A newest period that is still filling holds only the instances
// that reported in it so far; the lookback keeps the others in view.
func fleetNow(tl []Point, snap *Snapshot) (Point, bool) {
	p, ok := newest(tl)
	if !ok || snap.FetchedAt.Sub(p.Time) > max(snap.StaleAfter, snap.Period) {
		return Point{}, false
	}
	from := snap.FetchedAt.Add(-snap.FleetLookback)
	for i := len(tl) - 2; i >= 0 && snap.FleetLookback > 0; i-- {
		q := tl[i]
		if !q.Time.Add(snap.Period).After(from) {
			break
		}
		p.Max, p.Min, p.Samples = math.Max(p.Max, q.Max), math.Min(p.Min, q.Min), max(p.Samples, q.Samples)
	}
	return p, true
}

// gaugeState derives the fleet's state from its newest values.
func gaugeState(g Gauges) State {
	if !g.HasData {
		return NoData
	}
	lo, okLo := GaugeState(g.Min)
	hi, okHi := GaugeState(g.Max)
	if !okLo || !okHi {
		return NoData
	}
	if lo != hi {
		return Mixed
	}
	return FromBreaker(hi)
}

// notes explains disagreements between the override and the gauges.
func notes(st DependencyStatus, now time.Time, lag time.Duration) []string {
	var out []string
	g := st.Gauges
	forcedReporting := g.ByState[gauge.ForcedOpen]
	if forcedReporting == 0 && g.HasData && g.Max >= float64(gauge.ForcedOpen) {
		// The fleet's worst is forced although no instance shown is (no
		// breakdown, or a partial one): some instance reports it.
		forcedReporting = max(g.Samples, 1)
	}
	if st.Override != nil && st.Override.Malformed() {
		out = append(out, st.Override.MalformedSummary(now))
	}
	switch {
	case st.OverrideActive && st.GaugeState != Forced && st.GaugeState != NoData:
		age := now.Sub(st.Override.CreatedAt)
		// The verdict is Judge's (the source's bound); an unreadable
		// created_at is not "just set".
		verdict := NotObeyed
		if st.Fleet != nil {
			verdict = st.Fleet.Verdict
		}
		switch verdict {
		case Confirmed:
			// The newest complete period is forced; the lookback still
			// holds the minutes before the change.
		case Converging:
			out = append(out, fmt.Sprintf("override set %s ago: gauges catch up within %s", human.Age(max(age, 0)), human.Duration(lag)))
		default:
			n := g.Reporting - g.ByState[gauge.ForcedOpen]
			switch {
			case g.Known == 0:
				out = append(out, "override active but the gauges do not report forced: check that instances read the store")
			case g.Breakdown == BreakdownPartial:
				out = append(out, fmt.Sprintf("override active for %s but %d of the %d instances returned (a partial breakdown) do not report forced: check that they read the store",
					human.Age(max(age, 0)), n, g.Reporting))
			default:
				note := fmt.Sprintf("override active for %s but %d of %d instances do not report forced: check that they read the store",
					overrideAge(st.Override, now), n, g.Reporting)
				if st.Fleet != nil && len(st.Fleet.Stragglers) > 0 {
					note += " (not obeyed by " + strings.Join(st.Fleet.Stragglers, ", ") + ")"
				}
				out = append(out, note)
			}
		}
	case !st.OverrideActive && forcedReporting > 0:
		if st.Override != nil && now.Sub(st.Override.ExpiresAt) < lag {
			out = append(out, "override expired just now: gauges catch up within "+human.Duration(lag))
		} else {
			out = append(out, "gauges report forced but no override is active: instances catch up within "+human.Duration(lag)+" of a clear")
		}
	}
	if st.Override != nil && !st.OverrideActive && st.Override.State == breaker.OverrideStateForcedOpen && st.Override.Expires() {
		out = append(out, fmt.Sprintf("override expired %s ago (the item remains until cleared or collected)", human.Age(max(now.Sub(st.Override.ExpiresAt), 0))))
	}
	if st.GaugeState == NoData && g.Known > 0 {
		out = append(out, fmt.Sprintf("none of %s seen in the window reports now", human.Count(int64(g.Known), "instance")))
	}
	if g.Breakdown != BreakdownComplete && g.BreakdownNote != "" {
		out = append(out, g.BreakdownNote)
	}
	return out
}

// overrideAge is how long an override has been set, for a note; "an unknown
// time" when its created_at is malformed.
func overrideAge(o *breaker.Override, now time.Time) string {
	if o.CreatedAt.IsZero() {
		return "an unknown time"
	}
	return human.Age(max(now.Sub(o.CreatedAt), 0))
}
