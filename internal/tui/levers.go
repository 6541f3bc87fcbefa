package tui

import (
	"context"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// StoreOverrides implements [Overrides] with the override lever's use cases,
// as `koshactl breaker force-open` and `clear` run them: through Levers (the
// context's lever service under the table's policy), so every change is
// checked, asked of the policy (a change it needs approvals for becomes a
// change request, returned as a *lever.PendingError, nothing changed),
// audited and announced the same way.
type StoreOverrides struct {
	// Overrides reads the overrides.
	Overrides *breaker.Overrides
	// Levers moves them: the context's lever service under the table's
	// policy.
	Levers lever.Changer
	// Known lists the context's dependencies: List reads their overrides
	// consistently by key (see breaker.Overrides.ListForWith).
	Known []string
	// Notifier announces each force and clear, and each change request the
	// policy turned a lever into; nil announces nothing.
	Notifier notify.Notifier
}

var _ Overrides = StoreOverrides{}

// List implements [Overrides].
// The table's policy item is read in the same batch read, for its since.
func (s StoreOverrides) List(ctx context.Context) (OverrideList, error) {
	list, extras, err := s.Overrides.ListForWith(ctx, s.Known, []string{policy.Key, freeze.Key})
	if err != nil {
		return OverrideList{}, err
	}
	out := OverrideList{Overrides: list}
	if it, ok := extras[policy.Key]; ok {
		// A policy koshactl cannot read refuses every lever change (the
		// levers say so); its since still flags what bypassed it.
		out.PolicySince = policy.SinceOf(it)
	}
	if it, ok := extras[freeze.Key]; ok {
		if f, err := freeze.FromItem(it); err == nil {
			out.Freeze = &f
		}
	}
	return out, nil
}

// Force implements [Overrides]. An active override replaces only the one the
// operator saw (same version, breaker.ForceParams.SeenVersion); anything
// else is a *breaker.ConflictError.
func (s StoreOverrides) Force(ctx context.Context, req ForceRequest) (lever.Report, error) {
	p := breaker.ForceParams{For: req.For}
	if req.Replace != nil {
		v := req.Replace.Version
		p.SeenVersion = &v
	}
	return s.change(ctx, breaker.ForceOpen(req.Reason, p, req.Dependency))
}

// Clear implements [Overrides].
func (s StoreOverrides) Clear(ctx context.Context, dependency, reason string) (lever.Report, error) {
	return s.change(ctx, breaker.Clear(reason, dependency))
}

// change makes c and announces what it did (written, or requested).
func (s StoreOverrides) change(ctx context.Context, c lever.Change) (lever.Report, error) {
	rep, err := lever.Do(ctx, s.Levers, c, nil)
	if rep.Event != nil && s.Notifier != nil {
		s.Notifier.Notify(ctx, *rep.Event)
	}
	return rep, err
}
