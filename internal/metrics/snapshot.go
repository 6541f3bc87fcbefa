package metrics

import (
	"context"
	"math"
	"slices"
	"sort"
	"time"
)

// DefaultWindow is how far back the dashboard's timeline reaches.
const DefaultWindow = 60 * time.Minute

// DefaultPeriod is the length of one timeline point.
const DefaultPeriod = time.Minute

// GaugeSource reads the breaker_state gauges of a fleet.
type GaugeSource interface {
	// Fetch returns the gauges of req.Dependencies over the window ending
	// now: each dependency's fleet statistics, and the per-instance
	// breakdown of those req asks it for. A source may return series for
	// dependencies it discovered that are not asked for (a Prometheus scrape
	// reports whatever the fleet exports) and may return a breakdown nobody
	// asked for (a scrape costs the same either way). A partial failure (one
	// of several scrape targets, one result in error) is reported in
	// Snapshot.Warnings; an error means no usable data.
	Fetch(ctx context.Context, req FetchRequest) (Snapshot, error)
	// Describe names the source for headers and errors, e.g.
	// "cloudwatch Kosha/Resilience (eu-west-1)".
	Describe() string
}

// FetchRequest says what one [GaugeSource.Fetch] reads.
type FetchRequest struct {
	// Dependencies whose fleet statistics (worst, best, samples) are read.
	Dependencies []string
	// Window is how far back the timeline reaches; default [DefaultWindow].
	Window time.Duration
	// Instances names the dependencies whose per-instance breakdown is
	// wanted (the dashboard's detail view); AllInstances wants it for every
	// dependency. CloudWatch bills one metric per instance series, so it
	// fetches only these; worst and best never depend on it.
	Instances    []string
	AllInstances bool
}

// WantsInstances reports whether req asks for dep's per-instance breakdown.
func (r FetchRequest) WantsInstances(dep string) bool {
	return r.AllInstances || slices.Contains(r.Instances, dep)
}

// Breakdown says how much of a dependency's per-instance breakdown a
// [Series] holds.
type Breakdown uint8

// Breakdown values. The zero value is BreakdownComplete, so a source with
// nothing to say about completeness (a scrape) reports a complete set.
const (
	// BreakdownComplete: Instances holds every instance the source found in
	// the window (or the instance dimension does not exist).
	BreakdownComplete Breakdown = iota
	// BreakdownNotFetched: the source did not read per-instance series (a
	// CloudWatch source outside the detail view, to keep its cost down).
	BreakdownNotFetched
	// BreakdownPartial: the source says the set is incomplete: CloudWatch
	// truncated a SEARCH at its 500-metric limit or returned PartialData.
	BreakdownPartial
)

var breakdownTokens = [...]string{BreakdownComplete: "complete", BreakdownNotFetched: "not_fetched", BreakdownPartial: "partial"}

// String returns the breakdown's token as JSON output writes it: complete,
// not_fetched or partial.
func (b Breakdown) String() string { return token(breakdownTokens[:], b, "breakdown") }

// MarshalText encodes the breakdown as its token.
func (b Breakdown) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText decodes a breakdown's token.
func (b *Breakdown) UnmarshalText(text []byte) error {
	return parseToken(breakdownTokens[:], text, "breakdown", b)
}

// Point is one period of a gauge: the worst (largest) and best (smallest)
// value seen in it and how many values were aggregated.
type Point struct {
	// Time is the start of the period.
	Time time.Time `json:"time"`
	// Max is the worst state value in the period (2 = open).
	Max float64 `json:"max"`
	// Min is the best state value in the period.
	Min float64 `json:"min"`
	// Samples is the number of values in the period (CloudWatch SampleCount;
	// for Prometheus, scrapes times instances).
	Samples int `json:"samples"`
}

// InstanceSeries is one instance's gauge over the window.
type InstanceSeries struct {
	Instance string
	// Points are oldest first, one per period that has data.
	Points []Point
	// LastSeen is when the instance last reported: the scrape that saw it,
	// or the start of its newest CloudWatch period.
	LastSeen time.Time
	// Last is the instance's most recent value when the source knows it (a
	// scrape); nil means the newest point's Max (CloudWatch reports only
	// per-period statistics). Points, LastSeen and Last hold states only.
	Last *float64
	// Newest is the instance's reading in the newest read of a live source
	// (a scrape), whatever its value: nil when the instance was absent from
	// it, and always nil on CloudWatch. [Goal.Stand] judges by it.
	Newest *Reading
	// LastRead is when a live source last found the instance in a read,
	// whatever its value (zero on CloudWatch).
	LastRead time.Time
}

// Current returns the instance's current value: Last, else the newest
// point's worst value.
func (s InstanceSeries) Current() (float64, bool) {
	if s.Last != nil {
		return *s.Last, true
	}
	p, ok := s.Latest()
	return p.Max, ok
}

// Latest returns the newest point.
func (s InstanceSeries) Latest() (Point, bool) { return newest(s.Points) }

// newest is the last of points (oldest first), if there is one.
func newest(points []Point) (Point, bool) {
	if len(points) == 0 {
		return Point{}, false
	}
	return points[len(points)-1], true
}

// Series is one dependency's gauges over the window.
type Series struct {
	Dependency string
	// Timeline is the fleet's view, oldest first, one point per period that
	// has data.
	Timeline []Point
	// Instances holds per-instance series sorted by name; empty when the
	// instance dimension does not exist or the breakdown was not fetched.
	Instances []InstanceSeries
	// Breakdown says whether Instances is the whole set; BreakdownNote says
	// why not, in words.
	Breakdown     Breakdown
	BreakdownNote string
	// TimelineFromInstances reports that Timeline was derived from the
	// instance series (a scrape, or a publisher without the fleet dimension
	// set); worst and best then come from the instances' current values.
	// Otherwise they come from the fleet statistics alone.
	TimelineFromInstances bool
}

// Latest returns the fleet's newest point.
func (s Series) Latest() (Point, bool) { return newest(s.Timeline) }

// Snapshot is the result of one fetch.
type Snapshot struct {
	// Source describes where the gauges came from.
	Source string
	// FetchedAt is when the fetch started (by the source's clock).
	FetchedAt time.Time
	// Start and End bound the window; Period is the length of one point.
	Start, End time.Time
	Period     time.Duration
	// StaleAfter is how old an instance's newest point may be for the
	// instance to count as reporting. CloudWatch data arrives a minute or two
	// late, so it allows a few periods; a scrape is current or absent.
	StaleAfter time.Duration
	// FleetLookback is how far back the fleet's current values may lie in
	// the timeline: every period overlapping the last FleetLookback counts
	// toward worst, best and samples, because a newer period may hold only
	// the instances that reported in it so far (and, on CloudWatch, only
	// the datapoints already readable). Zero: the newest period alone.
	FleetLookback time.Duration
	// Live reports that instance values are current (a scrape): an
	// instance's value is its state at FetchedAt. Otherwise (CloudWatch)
	// values are per-period statistics, readable up to ReadDelay after the
	// period ends.
	Live      bool
	ReadDelay time.Duration
	// Lag is the source's bound on how long an override change takes to
	// show in these gauges ([Lagger]); zero means [OverrideLag].
	Lag time.Duration
	// Series holds one entry per dependency asked for (possibly without
	// data) and per dependency discovered.
	Series map[string]Series
	// Requests counts the API requests the fetch made (GetMetricData calls
	// or scrapes).
	Requests int
	// Metrics counts the metrics the fetch was answered with (CloudWatch:
	// queries plus SEARCH series, the unit GetMetricData is billed in; zero
	// for a scrape).
	Metrics int
	// Warnings are partial failures and messages from the backend.
	Warnings []string
}

// fleetTimeline derives a fleet timeline from instance series: per period,
// the largest Max, the smallest Min and the sum of samples.
func fleetTimeline(instances []InstanceSeries) []Point {
	byTime := map[int64]*Point{}
	for _, in := range instances {
		for _, p := range in.Points {
			k := p.Time.UnixNano()
			cur, ok := byTime[k]
			if !ok {
				cp := p
				byTime[k] = &cp
				continue
			}
			cur.Max = math.Max(cur.Max, p.Max)
			cur.Min = math.Min(cur.Min, p.Min)
			cur.Samples += p.Samples
		}
	}
	out := make([]Point, 0, len(byTime))
	for _, p := range byTime {
		out = append(out, *p)
	}
	sortPoints(out)
	return out
}

func sortPoints(ps []Point) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Time.Before(ps[j].Time) })
}
