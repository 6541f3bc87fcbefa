// Package resilience provides the data-plane resilience primitives of the
// Kosha design (LLD sections 1–5 and 7) as a Go library: deadline
// propagation, bulkheads, retries with full jitter and a retry budget,
// per-attempt timeouts, their composition per downstream, load shedding and
// the per-dependency defaults. The circuit breaker itself lives in
// internal/dataplane/circuit.
//
// It is the executable definition of what the control plane's overrides,
// buckets, chaos faults and gauges mean, and what koshactl's sandbox runs
// instead of the AWS data plane.
//
// # Composition
//
// A [Policy] runs one logical call to a downstream through the layers, outer
// to inner: deadline, bulkhead, circuit breaker, retry, attempt timeout.
// Each layer fails fast with a typed [Error] (match with errors.Is against
// [ErrDeadlineExceeded], [ErrBulkheadFull], [ErrCircuitOpen],
// [ErrAttemptTimeout]); the retry layer returns the last attempt's error.
// Retries happen inside the breaker, so one logical call counts once toward
// the failure rate.
//
// # Deadlines
//
// The request deadline is an absolute time, carried in the context (a
// standard context deadline) and across hops in [HeaderDeadline]
// ("X-Request-Deadline"); each hop subtracts its margin ([GatewayMargin],
// [InnerMargin]). Each attempt gets min(remaining - margin, attempt cap).
//
// # Outcomes
//
// An [AttemptFunc] reports a dependency's answer as an error: a
// *[StatusError] for an error status, a *[ConnError] (or a net error) for a
// connection failure. [Classify] decides what the breaker counts and what
// may be retried.
//
// # Time
//
// Every layer reads the time from an injected clock.Clock; timers (attempt
// timeouts, backoff, bulkhead waits) are the runtime's, so tests drive them
// with testing/synctest instead of sleeping.
package resilience
