// Package gauge provides the values of the breaker_state gauge
// (docs/contracts/breaker-state-metric.md) as one enum, [State]: 0 closed,
// 1 half-open, 2 open, 3 forced, and the names it is published under
// (CloudWatch namespace, metric name and dimensions; the Prometheus name),
// and the names of the call counters a lever's impact is read from.
// The data plane's circuit breaker reports its state in these numbers and
// the sandbox publishes it under these names; the control plane (metrics,
// the dashboard, drills) reads them back. Both import this package, which
// imports nothing of either.
package gauge
