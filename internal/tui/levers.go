package tui

import (
	"context"
	"errors"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// StoreOverrides implements [Overrides] on the breaker lever service,
// through the same lever operations as `koshactl breaker force-open` and
// `clear` (breaker.Overrides.ForceAll and ClearAll), so every change is
// checked, audited and announced the same way.
type StoreOverrides struct {
	Overrides *breaker.Overrides
	// Log records every change and change request.
	Log audit.Appender
	// Known lists the context's dependencies: List reads their overrides
	// consistently by key (see breaker.Overrides.ListFor).
	Known []string
	// Actor names who acts, for the item and the audit record.
	Actor func(ctx context.Context) (string, error)
	// Notifier announces each force and clear (after its audit record,
	// through the lever service's announcer) and each change request the
	// policy turned a lever into; nil announces nothing.
	Notifier notify.Notifier
	// Approvals, when set, asks the table's policy before each force and
	// clear, through the lever commands' own gate (approval.Gate): a change
	// the policy needs approvals for becomes a change request, returned as
	// an *approval.PendingError, and nothing is changed. Identity is who
	// asks (verified by STS or not).
	Approvals *approval.Service
	Identity  func(ctx context.Context) (audit.Identity, error)
}

var _ Overrides = StoreOverrides{}

// List implements [Overrides].
// The table's policy item is read in the same batch read, for its since.
func (s StoreOverrides) List(ctx context.Context) (OverrideList, error) {
	list, extras, err := s.Overrides.ListForWith(ctx, s.Known, []string{policy.Key})
	if err != nil {
		return OverrideList{}, err
	}
	out := OverrideList{Overrides: list}
	if it, ok := extras[policy.Key]; ok {
		// A policy koshactl cannot read refuses every lever change (the
		// levers say so); its since still flags what bypassed it.
		out.PolicySince = policy.SinceOf(it)
	}
	return out, nil
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
	gate := s.gate(ctx, approval.Question{Action: breaker.ActionForceOpen, Targets: []string{req.Dependency}, Duration: req.For, Reason: req.Reason})
	outs, err := s.levers().ForceAll(ctx, breaker.ForceAll{Requests: []breaker.ForceRequest{r}, Actor: s.Actor, Gate: gate.breaker()})
	if errors.Is(err, approval.ErrNeedsApproval) {
		change, cerr := approval.ForceChange(req.Reason, req.For, time.Time{}, false, req.Replace != nil, []string{req.Dependency}, gate.Befores)
		if cerr != nil {
			return breaker.ForceResult{}, cerr
		}
		return breaker.ForceResult{}, s.submit(ctx, gate, change)
	}
	if len(outs) == 0 {
		return breaker.ForceResult{}, err
	}
	return outs[0].Result, err
}

// leverGate is the policy's gate of one dashboard lever (nil without
// Approvals: the change is made as before policies existed).
type leverGate struct{ *approval.Gate }

func (s StoreOverrides) gate(ctx context.Context, q approval.Question) leverGate {
	if s.Approvals == nil {
		return leverGate{}
	}
	identity := s.Identity
	if identity == nil {
		identity = func(ctx context.Context) (audit.Identity, error) {
			a, err := s.Actor(ctx)
			return audit.Identity{Actor: a}, err
		}
	}
	return leverGate{s.Approvals.NewGate(ctx, identity, q)}
}

func (g leverGate) breaker() *breaker.Gate {
	if g.Gate == nil {
		return nil
	}
	return g.Breaker()
}

// submit stores the change the gate stopped as a change request, announces
// it as the lever commands do, and returns it as an *approval.PendingError.
func (s StoreOverrides) submit(ctx context.Context, g leverGate, c approval.Change) error {
	r, rec, err := g.Submit(ctx, s.Log, c, 0)
	if err != nil {
		return err
	}
	if s.Notifier != nil {
		ev := approval.RequestedEvent(r, rec)
		ev.Source = notify.SourceDashboard
		s.Notifier.Notify(ctx, ev)
	}
	return &approval.PendingError{Request: r}
}

// levers is the lever service as the dashboard pulls it: recorded in Log,
// announced from the dashboard as each change is made.
func (s StoreOverrides) levers() *breaker.Overrides {
	return s.Overrides.WithLog(s.Log).WithAnnounce(func(ctx context.Context, a breaker.Announcement) {
		if s.Notifier != nil {
			ev := notify.BreakerEvent(a)
			ev.Source = notify.SourceDashboard
			s.Notifier.Notify(ctx, ev)
		}
	})
}

// Clear implements [Overrides].
func (s StoreOverrides) Clear(ctx context.Context, dependency, reason string) (breaker.ClearResult, error) {
	gate := s.gate(ctx, approval.Question{Action: breaker.ActionClear, Targets: []string{dependency}, Reason: reason})
	outs, err := s.levers().ClearAll(ctx, breaker.ClearAll{Dependencies: []string{dependency}, Reason: reason, Actor: s.Actor, Gate: gate.breaker()})
	if errors.Is(err, approval.ErrNeedsApproval) {
		change, cerr := approval.ClearChange(reason, []string{dependency}, gate.Befores)
		if cerr != nil {
			return breaker.ClearResult{}, cerr
		}
		return breaker.ClearResult{}, s.submit(ctx, gate, change)
	}
	if len(outs) == 0 {
		return breaker.ClearResult{}, err
	}
	return outs[0].Result, err
}
