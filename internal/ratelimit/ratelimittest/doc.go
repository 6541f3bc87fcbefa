// Package ratelimittest holds the test doubles the bucket tests of both
// planes share: the operator operations' tests (internal/ratelimit) and the
// reference limiter's (internal/dataplane/limiter) run against the same
// in-memory store, which counts calls, fails on demand and can return the
// current item with a refused write, and read buckets back with [Stored].
//
// Only tests import it.
package ratelimittest
