// Package shared holds what the `koshactl ratelimit` commands have in common:
// the context's limits, client-id checks that exit 2, the JSON view of a
// bucket (docs/contracts/cli-output.md), human formatting, and the run loop
// of the mutating verbs (reset, drain, set).
package shared
