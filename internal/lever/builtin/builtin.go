// Package builtin lists the lever kinds koshactl has, one registration line
// per kind: the registry a context's commands, its dashboard, its MCP server
// and its drills look kinds up in. Only the process's wiring (the command
// factory, tests) imports it; the packages that serve every kind (approval,
// notify, iam, policy, the MCP command) see a [lever.Registry].
package builtin

import (
	"fmt"
	"time"

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

// For is the lever kinds of the context named name, on s: each built on
// first use with the context's settings (a setting a kind cannot use is a
// usage error naming its fix, for the commands that use that kind).
func For(s store.Store, clk clock.Clock, name string, c *config.Context) *lever.Registry {
	segments := DynamoSegments
	if c.IsLocal() {
		segments = 1
	}
	return Kinds(s, clk, Settings{MaxOverride: c.MaxOverrideDuration(), Buckets: func() (*ratelimit.Buckets, error) {
		b, err := buckets(s, clk, name, c)
		if err != nil {
			return nil, err
		}
		return b.WithScanSegments(segments), nil
	}})
}

// Store is what the built-in kinds need of a store.
type Store interface {
	breaker.OverrideStore
	ratelimit.ListStore
}

// Settings are what a caller sets of the built-in kinds. The zero value is
// every kind with its defaults, as tests' and drills' registries want them.
type Settings struct {
	// MaxOverride bounds an override's and a freeze's length (zero: each
	// kind's default).
	MaxOverride time.Duration
	// Overrides, when set, is the breaker kind as the caller built it.
	Overrides *breaker.Overrides
	// Buckets, when set, builds the rate-limit kind (default: default limits).
	Buckets func() (*ratelimit.Buckets, error)
}

// Kinds is the registry of the built-in kinds on s, as st sets them: the one
// list of kinds, one registration line a kind, that a context's commands,
// tests and drills all build their registry from.
func Kinds(s Store, clk clock.Clock, st Settings) *lever.Registry {
	return lever.NewRegistry(
		lever.Entry{Spec: breaker.Spec, New: func() (lever.Kind, error) {
			if st.Overrides != nil {
				return st.Overrides, nil
			}
			return breaker.NewOverrides(s, clk).WithDurations(breaker.DurationPolicy{Max: st.MaxOverride}), nil
		}},
		lever.Entry{Spec: ratelimit.Spec, New: func() (lever.Kind, error) {
			if st.Buckets != nil {
				return st.Buckets()
			}
			return ratelimit.NewBuckets(s, clk, ratelimit.Limits{})
		}},
		lever.Entry{Spec: freeze.Spec, New: func() (lever.Kind, error) { return freeze.NewLever(clk, st.MaxOverride), nil }},
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
