package approval_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Under four eyes a bake's put-back of a clear is allowed at once to the
// one who made the clear (four-eyes.cedar's bake-rollback: own_rollback),
// recorded as a force naming the clear's record; to anyone else it is
// denied, nothing written, and never becomes a change request.
func TestFourEyesLetsTheClearerPutBackAtOnce(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	levers := leversOn(c, clk, breaker.DurationPolicy{}).WithLog(log)
	as := func(id audit.Identity) *approval.Guard {
		return svc.Guard(levers, func(context.Context) (audit.Identity, error) { return id, nil }, "")
	}
	force := breaker.ForceOpen("provider incident", breaker.ForceParams{For: time.Hour}, "openai")
	force.Actor, force.BreakGlass = operator.Actor, true
	if _, err := lever.Do(ctx, as(operator), force, nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	clear := breaker.Clear("provider recovered", "openai")
	clear.Actor, clear.BreakGlass = operator.Actor, true
	rep, err := lever.Do(ctx, as(operator), clear, nil)
	if err != nil || len(rep.Written()) != 1 {
		t.Fatalf("the operator's break-glass clear: %+v, %v", rep, err)
	}
	rec, before := rep.Written()[0].Record, *breaker.ClearResultOf(rep.Written()[0]).Before
	clk.Advance(time.Minute)

	// Someone else cannot put back the operator's clear: denied, nothing
	// written, no request made.
	_, prep, err := breaker.PutBack(ctx, as(alice), "openai", alice.Actor, "bake: rollback", rec, before)
	if !errors.Is(err, approval.ErrPolicyDenied) || exitcode.Of(err) != exitcode.Refused || prep.Pending != nil {
		t.Fatalf("alice putting back the operator's clear: %v (exit %d), pending %+v; want denied, exit 7, no request", err, exitcode.Of(err), prep.Pending)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a denied put-back was written: %v", err)
	}

	res, prep, err := breaker.PutBack(ctx, as(operator), "openai", operator.Actor, "bake: rollback", rec, before)
	if err != nil || res.Restored == nil || len(prep.Written()) != 1 {
		t.Fatalf("the operator putting back its own clear: %+v, %+v, %v", res, prep, err)
	}
	w := prep.Written()[0].Record
	if w.Action != breaker.ActionForceOpen || w.RollbackOf != rec.ID || w.Approval == nil || w.Approval.Decision != audit.DecisionAllowed ||
		len(w.Approval.Policies) != 1 || w.Approval.Policies[0] != "bake-rollback" {
		t.Errorf("the put-back's record: %+v (approval %+v), want a force naming %s, allowed by bake-rollback", w, w.Approval, rec.ID)
	}
	if !res.Restored.ExpiresAt.Equal(before.ExpiresAt) || res.Restored.Reason != before.Reason {
		t.Errorf("put back %+v, want %+v's reason and expiry", res.Restored, before)
	}
	if prep.Event == nil || prep.Event.Outcome != "rolled back" {
		t.Errorf("the put-back's announcement %+v, want it loud", prep.Event)
	}

	// Put back again: the item is no longer as the clear left it (absent),
	// so nothing is overwritten.
	again, _, err := breaker.PutBack(ctx, as(operator), "openai", operator.Actor, "bake: rollback", rec, before)
	if err != nil || again.LeftAlone == nil || again.Restored != nil {
		t.Fatalf("a second put-back: %+v, %v; want the override left alone", again, err)
	}
}

// A policy that would hold the put-back for approvals refuses it (exit 7):
// a put-back restores what one clear removed, now or never, so it is never
// stored as a change request; nothing is written.
func TestAPolicyThatHoldsAPutBackRefusesIt(t *testing.T) {
	c, svc, log, clk := onPolicy(t, "approvals-for-all.cedar", []byte(`permit (principal, action, resource) when { context.approvals >= 1 };`))
	ctx := context.Background()
	levers := leversOn(c, clk, breaker.DurationPolicy{}).WithLog(log)
	g := svc.Guard(levers, func(context.Context) (audit.Identity, error) { return operator, nil }, "")
	clear := audit.Record{ID: "0123456789abcdef", Actor: operator.Actor, Action: breaker.ActionClear, Subject: "breaker#openai"}
	before := breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Reason: "provider incident", Actor: operator.Actor,
		ExpiresAt: clk.Now().Add(time.Hour), Version: 1}
	_, rep, err := breaker.PutBack(ctx, g, "openai", operator.Actor, "bake: rollback", clear, before)
	if exitcode.Of(err) != exitcode.Refused || !errors.Is(err, breaker.ErrNotRequestable) || rep.Pending != nil {
		t.Fatalf("a put-back the policy holds for approvals: %v (exit %d), pending %+v; want refused, exit 7, no request", err, exitcode.Of(err), rep.Pending)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused put-back was written: %v", err)
	}
	l, err := svc.List(ctx)
	if err != nil || len(l.Requests) != 0 {
		t.Errorf("requests after a refused put-back: %+v, %v; want none", l.Requests, err)
	}
}
