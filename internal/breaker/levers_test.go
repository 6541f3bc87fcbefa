package breaker_test

import (
	"context"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// levers is an Overrides and the lever service moving it on the same
// store, recording in log: what these tests set overrides up through.
type levers struct {
	*breaker.Overrides
	s   store.Store
	clk clock.Clock
	log audit.Appender
}

func newLevers(s store.Store, clk clock.Clock) levers {
	return levers{Overrides: breaker.NewOverrides(s, clk), s: s, clk: clk, log: audit.NewLog(s, clk, "ctx")}
}

// WithLog is l recording in log (nil: no log bound).
func (l levers) WithLog(log audit.Appender) levers {
	l.log = log
	return l
}

// WithDurations is l under p.
func (l levers) WithDurations(p breaker.DurationPolicy) levers {
	l.Overrides = l.Overrides.WithDurations(p)
	return l
}

// svc is the lever service of l's override kind.
func (l levers) svc() *lever.Service {
	return lever.NewService(l.s, l.clk, lever.NewRegistry(lever.Entry{Spec: breaker.Spec, New: func() (lever.Kind, error) { return l.Overrides, nil }})).
		WithLog(l.log)
}

// Change makes c.
func (l levers) Change(ctx context.Context, c lever.Change) (lever.Report, error) {
	return l.svc().Change(ctx, c)
}

// forceReq is one force as these tests ask it.
type forceReq struct {
	Dependency, Reason, Actor string
	For                       time.Duration
	ExpiresAt                 time.Time
	NoExpiry, Overwrite       bool
	SeenVersion               *int64
}

func (r forceReq) change() lever.Change {
	c := breaker.ForceOpen(r.Reason, breaker.ForceParams{For: r.For, ExpiresAt: r.ExpiresAt, NoExpiry: r.NoExpiry, Overwrite: r.Overwrite,
		SeenVersion: r.SeenVersion}, r.Dependency)
	c.Actor = r.Actor
	return c
}

// ForceOne forces one override with its record.
func (l levers) ForceOne(ctx context.Context, r forceReq) (breaker.ForceResult, lever.Outcome, error) {
	rep, err := l.Change(ctx, r.change())
	if len(rep.Outcomes) == 0 {
		return breaker.ForceResult{}, lever.Outcome{}, err
	}
	return breaker.ForceResultOf(rep.Outcomes[0]), rep.Outcomes[0], err
}

// Force forces one override, recorded in l's log.
func (l levers) Force(ctx context.Context, r forceReq) (breaker.ForceResult, error) {
	res, _, err := l.ForceOne(ctx, r)
	return res, err
}

// ClearOne clears one override as actor, with its record.
func (l levers) ClearOne(ctx context.Context, dependency, actor, reason string) (breaker.ClearResult, lever.Outcome, error) {
	c := breaker.Clear(reason, dependency)
	c.Actor = actor
	rep, err := l.Change(ctx, c)
	if len(rep.Outcomes) == 0 {
		return breaker.ClearResult{}, lever.Outcome{}, err
	}
	return breaker.ClearResultOf(rep.Outcomes[0]), rep.Outcomes[0], err
}

// Clear clears one override as "tester", recorded in l's log.
func (l levers) Clear(ctx context.Context, dependency string) (breaker.ClearResult, error) {
	res, _, err := l.ClearOne(ctx, dependency, "tester", "test")
	return res, err
}

// forceAll is the force of deps for "drill", an hour long, by actor.
func forceAll(actor string, deps ...string) lever.Change {
	c := breaker.ForceOpen("drill", breaker.ForceParams{For: time.Hour}, deps...)
	c.Actor = actor
	return c
}
