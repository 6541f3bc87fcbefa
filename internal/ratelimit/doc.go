// Package ratelimit provides the token-bucket rate limiter of the LLD (section
// 6) on the control-plane item store: the bucket item and its codec, the
// refill formula as pure functions, and the operator operations (inspect,
// list, reset, drain, set) behind `koshactl ratelimit`. The data plane's take
// that spends tokens is the reference limiter in internal/dataplane/limiter,
// which imports this package's codec and refill math; this package never
// imports it.
//
// # The bucket
//
// One item per client, pk "rl#<client_id>", with tokens (a number, possibly
// fractional or, after a timed drain, negative), updated_at (epoch ms) and ttl
// (epoch seconds). A missing item is a full bucket. A reader at time now sees
//
//	refilled = min(capacity, tokens + max(0, now - updated_at) / 1000 * rate)
//
// and admits a request iff refilled >= 1 (see [Limits.Refill] and
// docs/contracts/rate-limit-bucket.md).
//
// # The take
//
// The take is documented where it lives (internal/dataplane/limiter): the
// LLD's take with its four known flaws fixed. Operator changes here are
// conditional on the same updated_at the take compares, stamped strictly
// later, so an operator and a busy client never lose each other's write; each
// is written with its audit record in one store change ([store.Apply]).
package ratelimit
