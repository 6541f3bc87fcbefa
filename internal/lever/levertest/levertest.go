// Package levertest moves levers in tests' setups (tests only): an
// override forced or cleared with its record, as an operator, another
// koshactl or a writer that never asked the table's policy left it, through
// the one lever service of the built-in kinds; and Flags, a kind of tests
// only, shaped as a fleet freeze (an unguarded set, a guarded lift).
package levertest

import (
	"context"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// Store is what the built-in kinds need of a store.
type Store = builtin.Store

// Levers is the lever service of the built-in kinds on s (default
// settings), recording in log.
func Levers(s Store, clk clock.Clock, log audit.Appender) *lever.Service {
	return lever.NewService(s, clk, builtin.Kinds(s, clk, builtin.Settings{})).WithLog(log)
}

// Specs are the built-in kinds' specs, without a context: what the table's
// policy, IAM and the docs name.
func Specs() []lever.Spec { return builtin.For(nil, nil, "", config.BuiltinLocal()).Specs() }

// Req is one force as a test asks it.
type Req struct {
	Dependency, Reason, Actor string
	For                       time.Duration
	ExpiresAt                 time.Time
	NoExpiry, Overwrite       bool
}

// Force forces r's dependency open with its record in log, written by no
// policy (as a writer that never asked it).
func Force(ctx context.Context, s Store, clk clock.Clock, log audit.Appender, r Req) (breaker.ForceResult, lever.Outcome, error) {
	c := breaker.ForceOpen(r.Reason, breaker.ForceParams{For: r.For, ExpiresAt: r.ExpiresAt, NoExpiry: r.NoExpiry, Overwrite: r.Overwrite}, r.Dependency)
	c.Actor = r.Actor
	rep, err := Levers(s, clk, log).Change(ctx, c)
	if len(rep.Outcomes) == 0 {
		return breaker.ForceResult{}, lever.Outcome{}, err
	}
	return breaker.ForceResultOf(rep.Outcomes[0]), rep.Outcomes[0], err
}

// Clear clears dep's override as actor, with its record in log.
func Clear(ctx context.Context, s Store, clk clock.Clock, log audit.Appender, dep, actor, reason string) (breaker.ClearResult, lever.Outcome, error) {
	c := breaker.Clear(reason, dep)
	c.Actor = actor
	rep, err := Levers(s, clk, log).Change(ctx, c)
	if len(rep.Outcomes) == 0 {
		return breaker.ClearResult{}, lever.Outcome{}, err
	}
	return breaker.ClearResultOf(rep.Outcomes[0]), rep.Outcomes[0], err
}

// Bucket makes c, one bucket's change, as actor with its record in log.
func Bucket(ctx context.Context, s Store, clk clock.Clock, log audit.Appender, actor, reason string, c ratelimit.Change) (ratelimit.ChangeResult, lever.Outcome, error) {
	b, err := ratelimit.NewBuckets(s, clk, ratelimit.Limits{})
	if err != nil {
		return ratelimit.ChangeResult{}, lever.Outcome{}, err
	}
	lc := b.Change(c.Op, reason, ratelimit.Params{Tokens: c.Tokens, HoldFor: c.HoldFor}, c.Client)
	lc.Actor = actor
	rep, err := Levers(s, clk, log).Change(ctx, lc)
	if len(rep.Outcomes) == 0 {
		return ratelimit.ChangeResult{Change: c}, lever.Outcome{}, err
	}
	return ratelimit.ResultOf(rep.Outcomes[0]), rep.Outcomes[0], err
}
