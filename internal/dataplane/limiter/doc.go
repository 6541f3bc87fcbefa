// Package limiter is the reference data plane's token-bucket take (LLD
// section 6) on the control-plane item store: [Limiter.Take] spends one token
// from rl#<client_id>, with the bucket codec and refill math of
// internal/ratelimit (the contract both planes share).
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
//
// It is data plane: the sandbox runs it, the control plane never imports it
// (internal/layout checks).
package limiter
