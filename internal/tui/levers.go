package tui

import (
	"context"
	"errors"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// StoreOverrides implements [Overrides] on breaker.Overrides, writing an
// audit record for every change as `koshactl breaker force-open` and `clear`
// do.
type StoreOverrides struct {
	Overrides *breaker.Overrides
	Log       breaker.OverrideAuditor
	// Known lists the context's dependencies: List reads their overrides
	// consistently by key (see breaker.Overrides.ListFor).
	Known []string
	// Actor names who acts, for the item and the audit record.
	Actor func(ctx context.Context) (string, error)
	Clock clock.Clock
}

var _ Overrides = StoreOverrides{}

// List implements [Overrides].
func (s StoreOverrides) List(ctx context.Context) ([]breaker.Override, error) {
	return s.Overrides.ListFor(ctx, s.Known)
}

// Force implements [Overrides]. An active override replaces only the one the
// operator saw (same version); anything else is a *breaker.ConflictError.
func (s StoreOverrides) Force(ctx context.Context, req ForceRequest) (breaker.ForceResult, error) {
	actor, err := s.Actor(ctx)
	if err != nil {
		return breaker.ForceResult{}, err
	}
	now := clock.Clock(clock.Real{}).Now()
	if s.Clock != nil {
		now = s.Clock.Now()
	}
	cur, err := s.Overrides.Get(ctx, req.Dependency)
	active := false
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return breaker.ForceResult{}, err
	default:
		active = cur.ActiveAt(now)
	}
	if active && (req.Replace == nil || req.Replace.Version != cur.Version) {
		return breaker.ForceResult{}, &breaker.ConflictError{Current: cur, Raced: req.Replace != nil}
	}
	res, _, err := s.Overrides.ForceAudited(ctx, s.Log, breaker.ForceRequest{Dependency: req.Dependency, Reason: req.Reason,
		Actor: actor, ExpiresAt: now.Add(req.For), Overwrite: active})
	return res, err
}

// Clear implements [Overrides].
func (s StoreOverrides) Clear(ctx context.Context, dependency, reason string) (breaker.ClearResult, error) {
	actor, err := s.Actor(ctx)
	if err != nil {
		return breaker.ClearResult{}, err
	}
	res, _, err := s.Overrides.ClearAudited(ctx, s.Log, dependency, actor, reason)
	return res, err
}
