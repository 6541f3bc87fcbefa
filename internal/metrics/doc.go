// Package metrics provides the fleet's breaker_state gauges and the merged
// view of a dependency's breaker that the dashboard and `koshactl breaker
// status` show.
//
// A [GaugeSource] reads the gauges: [CloudWatch] (production: one
// GetMetricData request per refresh for up to 166 dependencies' fleet
// statistics, and the per-instance breakdown only of the dependencies a
// [FetchRequest] asks it for, budgeted to CloudWatch's 500 metrics per
// request) or [Prometheus] (the local sandbox's /metrics endpoint). Either
// returns a [Snapshot]: per dependency, a timeline of one-minute points (worst
// value, best value, number of samples) and, where the instance dimension
// exists and the breakdown was read, the same per instance, with a
// [Breakdown] saying whether that is the whole fleet.
//
// [Merge] combines a snapshot with the breaker overrides read from the store
// into one [DependencyStatus] per dependency, whose [State] is what an
// operator should believe: an active override means forced even while the
// gauges lag ([OverrideLag]), and the gauges' own view is kept beside it,
// with a note when the two disagree. Worst and best are the fleet's
// statistics, never a possibly truncated set of instance series. A
// [Collector] reads both sources and merges them for `breaker status`;
// [RefreshCost] and [CostWarning] say what refreshing CloudWatch costs.
//
// [ChooseSource] is the one place that decides which source a context
// reads (its [SourceKind] and description, before anything is opened);
// [NewSource] opens that choice as a [Source], whose Hint and CostWarning
// are the kind's, so no view compares descriptions.
//
// # Why not an average
//
// breaker_state is an enumeration (0 closed, 1 half-open, 2 open, 3 forced),
// not a quantity: the mean of two open and six closed instances (0.5) names
// no state. The fleet is described by its worst value (Maximum), its best
// (Minimum) and how many instances or samples report; equal worst and best
// mean the fleet agrees, otherwise it is mixed. The metric contract is
// docs/contracts/breaker-state-metric.md.
package metrics
