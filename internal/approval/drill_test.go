package approval_test

import (
	"context"
	"errors"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

var gameDay = approval.DrillRun{File: "game-day.yaml", Name: "game-day", SHA256: "9b1c44e0d2aa9b1c44e0d2aa9b1c44e0d2aa9b1c44e0d2aa9b1c44e0d2aa1234",
	Context: "test", Levers: []approval.DrillLever{{Action: breaker.ActionForceOpen, Target: "openai", DurationSeconds: 300},
		{Action: "chaos.sign", Target: "core-api"}, {Action: breaker.ActionForceOpen, Target: "openai", DurationSeconds: 300}}}

var carol = audit.Identity{Actor: "arn:aws:iam::123456789012:user/carol", Source: audit.ActorSTS, UserID: "AIDACAROL"}

func asks(id audit.Identity) func(context.Context) (audit.Identity, error) {
	return func(context.Context) (audit.Identity, error) { return id, nil }
}

// A drill.run request names the policy's levers once (a chaos header is
// none); approving it applies nothing and marks it approved, once; the
// requester cannot approve it; a run with it passes AuthorizeDrill.
func TestDrillRequestIsApprovedNotApplied(t *testing.T) {
	c, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	if _, err := svc.AuthorizeDrill(ctx, gameDay, asks(alice), ""); !errors.Is(err, approval.ErrDrillNoApproval) {
		t.Fatalf("authorize without a request: %v, want ErrDrillNoApproval", err)
	}
	r, _, err := svc.SubmitDrill(ctx, log, gameDay, alice, "game day", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Change.Drill.Levers) != 1 || r.Change.Targets[0] != "breaker.force-open openai" {
		t.Errorf("levers %+v, targets %v: want the force of openai once", r.Change.Drill.Levers, r.Change.Targets)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: alice, SHA256: r.SHA256}); !errors.Is(err, approval.ErrSelf) {
		t.Errorf("the requester's approval: %v, want ErrSelf", err)
	}
	res, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
	if err != nil || !res.Authorized || res.Applied || res.Request.Status != approval.StatusApproved {
		t.Fatalf("approve: %+v, %v: want approved, nothing applied", res, err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("approving a drill request forced openai: %v", err)
	}
	got, err := svc.Get(ctx, r.ID)
	if err != nil || got.Status != approval.StatusApproved {
		t.Fatalf("stored: %+v %v: want approved", got, err)
	}
	if again, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: carol, SHA256: r.SHA256}); err != nil || !again.AlreadyApplied {
		t.Errorf("approve again: %+v, %v: want nothing done", again, err)
	}
	auth, err := svc.AuthorizeDrill(ctx, gameDay, asks(carol), r.ID)
	if err != nil || auth.Request == nil || auth.Request.ID != r.ID {
		t.Errorf("authorize with the approved request: %+v, %v", auth, err)
	}
	other := gameDay
	other.Context = "prod"
	if _, err := svc.AuthorizeDrill(ctx, other, asks(carol), r.ID); !errors.Is(err, approval.ErrHashMismatch) {
		t.Errorf("authorize on another context: %v, want ErrHashMismatch", err)
	}
}

// A drill whose levers the policy allows at once needs no request.
func TestDrillWithoutPolicyLeversNeedsNoRequest(t *testing.T) {
	_, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	calm := gameDay
	calm.Levers = []approval.DrillLever{{Action: ratelimit.ActionDrain, Target: "agent-1"}, {Action: "chaos.sign", Target: "core-api"}}
	if _, err := svc.AuthorizeDrill(ctx, calm, asks(alice), ""); err != nil {
		t.Errorf("authorize a drill the policy allows: %v", err)
	}
	if _, _, err := svc.SubmitDrill(ctx, log, calm, alice, "", time.Hour); err == nil {
		t.Error("a request for a drill that needs none was made")
	}
}

// Only a drill.run request may be stored approved.
func TestApprovedLeverRequestIsMalformed(t *testing.T) {
	c, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := c.Get(ctx, approval.RequestPrefix+r.ID)
	if err != nil {
		t.Fatal(err)
	}
	it["status"] = approval.StatusApproved
	if _, err := approval.RequestFromItem(it); !errors.Is(err, approval.ErrMalformed) {
		t.Errorf("a force request stored approved: %v, want ErrMalformed", err)
	}
}

// A final mark is its writer's word: bob, the first of the two approvers
// a drill's force needs, rewrites his own approval as final (IAM lets him
// write his own proof's key) and stores the request approved with its
// closed marker (the approver role writes both). The run is refused: the
// policy asks two people, and the proofs show one.
func TestOneApproverCannotCompleteTwoApprovals(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	setPolicy(t, c, log, twoEyes)
	r, _, err := svc.SubmitDrill(ctx, log, gameDay, alice, "game day", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); err != nil || res.Remaining != 1 {
		t.Fatalf("bob's approval: %+v, %v: want one more needed", res, err)
	}
	it, err := c.Get(ctx, approval.RequestPrefix+r.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := approval.RequestFromItem(it)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := c.Get(ctx, stored.Proofs[len(stored.Proofs)-1])
	if err != nil {
		t.Fatal(err)
	}
	mine["final"] = int64(1)
	it["status"], it["decided_by"], it["decided_at"] = approval.StatusApproved, bob.Actor, clk.Now().UnixMilli()
	for _, w := range []store.Item{mine, it, {store.PK: approval.ClosedKey(r.ID), "verb": "approve", store.WriteIDAttr: "bob"}} {
		if err := c.s.Put(ctx, w, store.Always()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.AuthorizeDrill(ctx, gameDay, asks(carol), r.ID); !errors.Is(err, approval.ErrApprovalUnproven) {
		t.Errorf("a run on one approver's final mark of two approvals: %v, want ErrApprovalUnproven", err)
	}
}
