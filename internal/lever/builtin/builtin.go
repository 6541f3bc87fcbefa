// Package builtin lists the lever kinds koshactl has, one registration line
// per kind: the registry a context's commands, its dashboard, its MCP server
// and its drills look kinds up in. Only the process's wiring (the command
// factory, tests) imports it; the packages that serve every kind (approval,
// notify, iam, policy, the MCP command) see a [lever.Registry].
package builtin

import (
	"fmt"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// DynamoSegments is the parallel scan width of a scan on DynamoDB contexts
// (the local store scans serially).
const DynamoSegments = 4

// Specs are the kinds' specs, without a context: what the table's policy,
// IAM and the docs name.
func Specs() []lever.Spec { return For(nil, nil, "", config.BuiltinLocal()).Specs() }

// For is the lever kinds of the context named name, on s: each built on
// first use with the context's settings (a setting a kind cannot use is a
// usage error naming its fix, for the commands that use that kind).
func For(s store.Store, clk clock.Clock, name string, c *config.Context) *lever.Registry {
	segments := DynamoSegments
	if c.IsLocal() {
		segments = 1
	}
	return lever.NewRegistry(
		lever.Entry{Spec: breaker.Spec, New: func() (lever.Kind, error) {
			return breaker.NewOverrides(s, clk).WithDurations(breaker.DurationPolicy{Max: c.MaxOverrideDuration()}), nil
		}},
		lever.Entry{Spec: ratelimit.Spec, New: func() (lever.Kind, error) {
			b, err := buckets(s, clk, name, c)
			if err != nil {
				return nil, err
			}
			return b.WithScanSegments(segments), nil
		}},
		lever.Entry{Spec: freeze.Spec, New: func() (lever.Kind, error) { return freeze.NewLever(clk, c.MaxOverrideDuration()), nil }},
	)
}

// buckets is the context's rate-limit buckets, under its limits.
func buckets(s store.Store, clk clock.Clock, name string, c *config.Context) (*ratelimit.Buckets, error) {
	l, err := ratelimit.NewLimits(c.RateLimit.Capacity, c.RateLimit.RefillPerSecond)
	if err == nil {
		var b *ratelimit.Buckets
		if b, err = ratelimit.NewBuckets(s, clk, l); err == nil {
			return b, nil
		}
	}
	return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("context %q: %w; fix it with koshactl config set-context %s --ratelimit-capacity N --ratelimit-refill R",
		name, err, name))
}
