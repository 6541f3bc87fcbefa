// Package circuit provides the reference data plane's circuit breaker (LLD
// section 2): a count-based breaker with the states closed, half_open, open
// and forced_open, and the watcher that applies the fleet-wide forced_open
// override from the control-plane store.
//
// It is data plane: the control plane never imports it
// (internal/layout checks). What both planes share lives in the contract
// packages it imports: the state numbers in internal/gauge ([State] is
// [gauge.State]), the override item, its rule and the 5 s cache in
// internal/breaker ([breaker.Force], [breaker.CacheTTL]).
//
// # State machine
//
//   - closed → open: the failure rate over the sliding window of the last N
//     outcomes is at least the threshold, and the window holds at least
//     MinCalls outcomes.
//   - open → half_open: the open duration has elapsed (checked lazily, on the
//     next [Breaker.Allow], [Breaker.State] or [Breaker.Snapshot]).
//   - half_open → closed: all probes (3) succeeded.
//   - half_open → open: any probe failed.
//   - any state → forced_open: the override is set ([Breaker.ForceOpen]).
//   - forced_open → closed: the override is cleared ([Breaker.ClearForce]).
//
// Half-open admits at most Probes calls per period, and never more than
// Probes probes running at once (counting probes of earlier periods still in
// flight); other calls fail fast with [ErrTooManyProbes].
//
// # Outcomes
//
// The breaker counts what the caller reports: [Success], [Failure] or
// [Ignored]. The design counts timeouts, connection errors and 5xx answers
// as failures and 4xx answers as successes; internal/dataplane/resilience classifies
// errors that way and reports the outcome of each logical call once, after
// its retries.
//
// # Hot path
//
// [Breaker.Allow] and [Breaker.Done] are the allocation-free two-step API:
// a closed breaker admits with one atomic load, and recording an outcome is
// one short mutex hold over a ring buffer. [Breaker.Execute] wraps both
// around a function, recording a panic as a failure before it continues.
//
// # Observability
//
// Every state change is reported, in order, to [Settings.Gauge] (the
// breaker_state gauge: 0 closed, 1 half-open, 2 open, 3 forced), to
// [Settings.OnStateChange] and as a structured slog event
// "breaker_state_change".
//
// # Override
//
// [ForceWatcher] reads a [ForceSource] (the store item breaker#<dependency>;
// in production *breaker.Overrides) at most once per refresh interval (5 s) and forces or clears the breaker
// accordingly. An expired or absent override clears it; a failed read keeps
// the last known value and is counted.
package circuit
