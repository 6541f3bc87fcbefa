// Package ratelimit provides the token-bucket rate limiter of the LLD (section
// 6) on the control-plane item store: the bucket item and its codec, the
// refill formula as pure functions, the reference [Limiter.Take] the data
// plane runs, and the operator operations (inspect, list, reset, drain, set)
// behind `koshactl ratelimit`.
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
// [Limiter.Take] is the LLD's take with its four known flaws fixed: two
// takes in the same millisecond (or a lagging clock) both passing the
// "updated_at = :seen" condition and spending one token; a lagging clock
// refilling backwards and moving updated_at backwards; failing open after
// three refused writes, which lets a client's own concurrency through
// unmetered; and two concurrent first takes both creating the item. It
// stamps a strictly increasing updated_at (max(now, seen+1)), never refills
// for a negative elapsed time, creates only when absent, and on contention
// denies instead of allowing; it fails open only when the store itself
// fails. The pseudocode as written lives beside this package's tests
// (lld_test.go), which reproduce each flaw against it and check that the
// take does not have it; the benchmark compares the two.
package ratelimit
