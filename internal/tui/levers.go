package tui

import (
	"context"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/notify"
)

// StoreOverrides implements [Overrides] on breaker.Overrides, through the
// same lever operations as `koshactl breaker force-open` and `clear`
// (breaker.Overrides.ForceAll and ClearAll), so every change is audited the
// same way.
type StoreOverrides struct {
	Overrides *breaker.Overrides
	Log       audit.Appender
	// Known lists the context's dependencies: List reads their overrides
	// consistently by key (see breaker.Overrides.ListFor).
	Known []string
	// Actor names who acts, for the item and the audit record.
	Actor func(ctx context.Context) (string, error)
	Clock clock.Clock
	// Notifier announces each force and clear (after its audit record),
	// as the commands do; nil announces nothing.
	Notifier notify.Notifier
}

var _ Overrides = StoreOverrides{}

// List implements [Overrides].
func (s StoreOverrides) List(ctx context.Context) ([]breaker.Override, error) {
	return s.Overrides.ListFor(ctx, s.Known)
}

// Force implements [Overrides]. An active override replaces only the one the
// operator saw (same version, breaker.ForceRequest.SeenVersion); anything
// else is a *breaker.ConflictError.
func (s StoreOverrides) Force(ctx context.Context, req ForceRequest) (breaker.ForceResult, error) {
	r := breaker.ForceRequest{Dependency: req.Dependency, Reason: req.Reason, For: req.For}
	if req.Replace != nil {
		v := req.Replace.Version
		r.SeenVersion = &v
	}
	outs, err := s.Overrides.ForceAll(ctx, s.Log, breaker.ForceAll{Requests: []breaker.ForceRequest{r}, Actor: s.Actor})
	if len(outs) == 0 {
		return breaker.ForceResult{}, err
	}
	s.notify(ctx, breaker.ActionForceOpen, req.Reason, notify.ForceLevers(outs))
	return outs[0].Result, err
}

func (s StoreOverrides) notify(ctx context.Context, action, reason string, levers []notify.Lever) {
	if s.Notifier == nil || len(levers) == 0 {
		return
	}
	actor, _ := s.Actor(ctx)
	s.Notifier.Notify(ctx, notify.Event{Action: action, Source: notify.SourceDashboard, Actor: actor, Reason: reason, Levers: levers})
}

// Clear implements [Overrides].
func (s StoreOverrides) Clear(ctx context.Context, dependency, reason string) (breaker.ClearResult, error) {
	outs, err := s.Overrides.ClearAll(ctx, s.Log, breaker.ClearAll{Dependencies: []string{dependency}, Reason: reason, Actor: s.Actor})
	if len(outs) == 0 {
		return breaker.ClearResult{}, err
	}
	s.notify(ctx, breaker.ActionClear, reason, notify.ClearLevers(outs))
	return outs[0].Result, err
}
