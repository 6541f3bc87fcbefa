package approval_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Sessions of one person in two roles (Identity Center: alice holds the
// Operator and the Approver permission sets; each session is named
// alice, each has a unique id of its own).
var (
	aliceOperator = audit.Identity{Actor: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Operator_1a2b/alice", Source: audit.ActorSTS,
		UserID: "AROAOPERATOR:alice"}
	aliceApprover = audit.Identity{Actor: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Approver_3c4d/alice", Source: audit.ActorSTS,
		UserID: "AROAAPPROVER:alice"}
	bobApprover = audit.Identity{Actor: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Approver_3c4d/Bob", Source: audit.ActorSTS,
		UserID: "AROAAPPROVER:Bob"}
)

// One person is one pair of eyes, whichever role they act in: alice,
// who asked as an operator, cannot approve as an approver; bob, who
// approved as his IAM user, cannot give a policy's second approval as
// his approver session. Nothing is forced either time.
func TestOnePersonUnderTwoRolesIsOnePairOfEyes(t *testing.T) {
	c, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: aliceOperator,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: aliceApprover, SHA256: r.SHA256}); !errors.Is(err, approval.ErrSelf) {
		t.Errorf("alice approving her own request as an approver: %v, want ErrSelf", err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai forced on its requester's own approval: %v", err)
	}

	setPolicy(t, c, log, twoEyes)
	r, _, err = svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bobApprover, SHA256: r.SHA256}); !errors.Is(err, approval.ErrSelf) {
		t.Errorf("bob's second approval as his approver session: %v, want ErrSelf", err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai forced on one person's two approvals: %v", err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: carol, SHA256: r.SHA256}); err != nil {
		t.Errorf("carol's approval, the second person's: %v", err)
	}
}
