package approval_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// operator is an STS-verified caller in the operator role: four-eyes.cedar
// lets it break the glass.
var operator = audit.Identity{Actor: "arn:aws:sts::123456789012:assumed-role/operator/carol", Source: audit.ActorSTS, UserID: "AROAOPERATOR:carol"}

// The guard wraps the lever service once: a change the policy needs
// approvals for is stored as a request (its report says which, its error
// exits 12) and nothing is written; one the policy allows carries how on
// its records; a break-glass leaves its review and is never quiet.
func TestTheGuardDecidesEveryChangeOnce(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	levers := leversOn(c, clk, breaker.DurationPolicy{}).WithLog(log)
	as := func(id audit.Identity) *approval.Guard {
		return svc.Guard(levers, func(context.Context) (audit.Identity, error) { return id, nil }, "")
	}
	force := breaker.ForceOpen("provider incident", breaker.ForceParams{For: 1800e9}, "openai")
	force.Actor = alice.Actor

	rep, err := lever.Do(ctx, as(alice), force, nil)
	var pe *lever.PendingError
	if !errors.As(err, &pe) || exitcode.Of(err) != exitcode.Pending || rep.Pending == nil || rep.Pending.ID != pe.Pending.ID || rep.Event == nil {
		t.Fatalf("a force four eyes hold: %+v, %v; want it pending, exit 12, announced", rep, err)
	}
	r, err := svc.Get(ctx, rep.Pending.ID)
	if err != nil || r.Status != approval.StatusPending || r.Change.Summary() != "force open openai for 30m" || rep.Pending.Summary != r.Change.Summary() {
		t.Fatalf("the request stored: %+v, %v", r, err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a held force was written: %v", err)
	}

	// A break-glass by the operator: written at once with its review, loud.
	glass := force
	glass.Actor, glass.BreakGlass, glass.NoNotify = operator.Actor, true, true
	if _, err := lever.Do(ctx, as(operator), glass, nil); !errors.Is(err, audit.ErrBreakGlassQuiet) {
		t.Fatalf("a quiet break-glass: %v, want ErrBreakGlassQuiet", err)
	}
	glass.NoNotify = false
	rep, err = lever.Do(ctx, as(operator), glass, nil)
	if err != nil || rep.Review == "" || len(rep.Written()) != 1 || rep.Event == nil || rep.Event.Outcome != "break-glass" {
		t.Fatalf("a break-glass force: %+v, %v; want written, reviewed, announced loud", rep, err)
	}
	if a := rep.Written()[0].Record.Approval; a == nil || !a.BreakGlass() || a.Review != rep.Review {
		t.Errorf("the break-glass record's approval: %+v, want its review %s", a, rep.Review)
	}

	// A change the policy allows carries how.
	k, err := levers.Kinds().Kind("ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	set := k.(*ratelimit.Buckets).Change(ratelimit.OpSet, "slow it", ratelimit.Params{Tokens: 3}, "c1")
	set.Actor = alice.Actor
	rep, err = lever.Do(ctx, as(alice), set, nil)
	if err != nil || len(rep.Written()) != 1 || rep.Review != "" {
		t.Fatalf("a set the policy allows: %+v, %v", rep, err)
	}
	if a := rep.Written()[0].Record.Approval; a == nil || a.Decision != audit.DecisionAllowed || len(a.Policies) == 0 {
		t.Errorf("an allowed change's record: %+v, want the policies that allowed it", a)
	}
}

// A break-glass on a table without a policy has nothing to break: a usage
// error, nothing written; without the flag the change goes as always.
func TestABreakGlassWithoutAPolicyIsAUsageError(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "n.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	levers := leversOn(s, clk, breaker.DurationPolicy{}).WithLog(audit.NewLog(s, clk, "test"))
	g := approval.NewService(s, clk, levers, "test").Guard(levers, func(context.Context) (audit.Identity, error) { return operator, nil }, "")
	force := breaker.ForceOpen("drill", breaker.ForceParams{For: time.Hour}, "openai")
	force.Actor, force.BreakGlass = operator.Actor, true
	if _, err := lever.Do(ctx, g, force, nil); !errors.Is(err, approval.ErrNothingToBreak) || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("a break-glass without a policy: %v (exit %d), want a usage error", err, exitcode.Of(err))
	}
	if _, err := s.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("written: %v", err)
	}
	force.BreakGlass = false
	if rep, err := lever.Do(ctx, g, force, nil); err != nil || len(rep.Written()) != 1 || rep.Written()[0].Record.Approval != nil {
		t.Fatalf("a force without a policy: %+v, %v; want written as always, no approval recorded", rep, err)
	}
}

// A kind beside the built-in ones, whose set is unguarded as a fleet
// freeze's is: under a policy that holds every lever for an approval, its
// set is written at once, with no request, while its lift waits for an
// approval like any guarded lever. The schema has no set for a policy to
// name: the policy is never asked about it.
func TestAnUnguardedActionNeverWaits(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	ctx, log := context.Background(), audit.NewLog(s, clk, "test")
	levers := lever.NewService(s, clk, lever.NewRegistry(levertest.Flags{}.Entry())).WithLog(log)
	sch := approval.PolicySchema([]lever.Spec{levertest.FlagSpec})
	if _, err := policy.Parse(sch, "set.cedar", []byte(`permit (principal, action == Kosha::Action::"flag.set", resource);`)); err == nil {
		t.Error("a policy naming flag.set parsed: the policy is never asked about an unguarded action")
	}
	set, err := policy.Parse(sch, "all.cedar", []byte("@id(\"all\")\n@approvals(\"1\")\npermit (principal, action, resource) when { context.approvals >= 1 };\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.NewPolicies(s, clk, sch).Set(ctx, log, set, audit.Identity{Actor: "admin", Source: audit.ActorUnverified}, "four eyes"); err != nil {
		t.Fatal(err)
	}
	svc := approval.NewService(s, clk, levers, "test")
	g := svc.Guard(levers, func(context.Context) (audit.Identity, error) { return alice, nil }, "")
	c := lever.Change{Action: "flag.set", Targets: []string{"fleet"}, Reason: "incident", Actor: alice.Actor}
	rep, err := lever.Do(ctx, g, c, nil)
	if err != nil || rep.Pending != nil || len(rep.Written()) != 1 {
		t.Fatalf("an unguarded set under four eyes: %+v, %v; want it written at once", rep, err)
	}
	c.Action = "flag.lift"
	rep, err = lever.Do(ctx, g, c, nil)
	if exitcode.Of(err) != exitcode.Pending || rep.Pending == nil || len(rep.Written()) != 0 {
		t.Fatalf("a lift under four eyes: %+v, %v; want it pending, exit 12", rep, err)
	}
	if _, err := s.Get(ctx, "flag#fleet"); err != nil {
		t.Errorf("the held lift deleted the flag: %v", err)
	}
	// No guard asks for a set; a request for one, made by hand, is
	// malformed: nothing to approve.
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: approval.Change{Action: "flag.set", Targets: []string{"other"}, Reason: "by hand"},
		Requester: alice, Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); !errors.Is(err, approval.ErrMalformed) {
		t.Errorf("a request for an unguarded set approved: %v, want ErrMalformed", err)
	}
	if _, err := s.Get(ctx, "flag#other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the request's set was written: %v", err)
	}
}
