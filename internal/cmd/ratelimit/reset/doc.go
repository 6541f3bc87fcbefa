// Package reset implements `koshactl ratelimit reset`: refill clients'
// buckets to capacity, so their next requests pass.
package reset
