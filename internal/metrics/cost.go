package metrics

import (
	"fmt"
	"math"
	"time"

	"github.com/kosha-platform/koshactl/internal/human"
)

// ListPricePerThousandMetrics is GetMetricData's list price in US dollars per
// 1,000 metrics requested (us-east-1; other regions differ slightly).
const ListPricePerThousandMetrics = 0.01

// AssumedInstances is the fleet size the cost warning assumes for one
// dependency's per-instance breakdown: koshactl cannot know it before the
// first read.
const AssumedInstances = 300

// RefreshCost models what a view refreshing a [CloudWatch] source costs in
// GetMetricData metrics: every refresh reads each dependency's fleet
// statistics ([FleetQueriesPerDependency] metrics), and the per-instance
// breakdown of Breakdowns dependencies is read at most every BreakdownEvery,
// one metric per instance series.
type RefreshCost struct {
	// Dependencies whose fleet statistics are read every refresh.
	Dependencies int
	// Breakdowns is how many dependencies' breakdowns are read (the
	// dashboard's detail view: 1; `breaker status --instances`: all shown).
	Breakdowns int
	// Instances is the number of instance series per breakdown.
	Instances int
	// Interval between refreshes.
	Interval time.Duration
	// BreakdownEvery: default [DefaultPeriod], as [CloudWatchOptions].
	BreakdownEvery time.Duration
}

// FleetMetrics is the metrics of one refresh's fleet statistics.
func (c RefreshCost) FleetMetrics() int { return c.Dependencies * FleetQueriesPerDependency }

// BreakdownMetrics is the metrics of one read of every breakdown.
func (c RefreshCost) BreakdownMetrics() int { return c.Breakdowns * c.Instances }

// MetricsPerHour is the metrics an hour of refreshing requests.
func (c RefreshCost) MetricsPerHour() float64 {
	if c.Interval <= 0 {
		return 0
	}
	every := c.BreakdownEvery
	if every <= 0 {
		every = DefaultPeriod
	}
	refreshes := float64(time.Hour) / float64(c.Interval)
	breakdowns := float64(time.Hour) / float64(max(c.Interval, every))
	return refreshes*float64(c.FleetMetrics()) + breakdowns*float64(c.BreakdownMetrics())
}

// PerHour is the list price of an hour of refreshing, in US dollars.
func (c RefreshCost) PerHour() float64 {
	return c.MetricsPerHour() / 1000 * ListPricePerThousandMetrics
}

// CostWarning explains what refreshing a CloudWatch source every interval
// costs for deps dependencies, with breakdowns of them shown per instance
// (assuming [AssumedInstances] each).
func CostWarning(deps, breakdowns int, interval time.Duration) string {
	c := RefreshCost{Dependencies: deps, Breakdowns: breakdowns, Instances: AssumedInstances, Interval: interval}
	perHour := c.PerHour()
	slow := c
	slow.Interval = max(interval, time.Minute)
	times := 1.0
	if s := slow.PerHour(); s > 0 {
		times = math.Max(perHour/s, 1)
	}
	breakdown := "no per-instance breakdown"
	if breakdowns > 0 {
		what := "the dependency in the detail view"
		if breakdowns != 1 {
			what = human.Count(int64(breakdowns), "dependency")
		}
		breakdown = fmt.Sprintf("the per-instance breakdown of %s, one metric per instance at most every %s (%d metrics, assuming %d instances)",
			what, DefaultPeriod, c.BreakdownMetrics(), AssumedInstances)
	}
	return fmt.Sprintf("GetMetricData is billed per metric requested: refreshing every %s requests %d metrics "+
		"(%d dependencies x %d fleet statistics) and %s; about $%.2f an hour or $%.2f a day at $%.2f per 1,000; "+
		"an interval of 60s or more costs %.1f times less",
		interval, c.FleetMetrics(), deps, FleetQueriesPerDependency, breakdown, perHour, perHour*24, ListPricePerThousandMetrics, times)
}
