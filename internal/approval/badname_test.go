package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A clear requested for an override item whose pk is not a valid
// dependency name (breaker clear --key 'breaker#Bad Name', an item written
// by hand) is approvable: the approval clears it by its key, conditional on
// the item as requested, in one transaction with the request's status.
func TestApprovedClearOfABadNameByKey(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	if err := c.s.Put(ctx, store.Item{store.PK: "breaker#Bad Name", "state": "forced_open", "reason": "by hand", "actor": "carol",
		"created_at": clk.Now().UnixMilli(), "version": int64(1)}, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	all, err := breaker.NewOverrides(c, clk).List(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("list: %v %v", all, err)
	}
	image, err := json.Marshal(breaker.AuditState(&all[0]))
	if err != nil {
		t.Fatal(err)
	}
	change := approval.Change{Action: breaker.ActionClear, Targets: []string{"Bad Name"}, Reason: "hand-written",
		Before: map[string]json.RawMessage{"Bad Name": image}}
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: change, Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
	if err != nil || !res.Applied || len(res.Records) != 1 {
		t.Fatalf("approve the clear of breaker#Bad Name: %+v %v", res, err)
	}
	if _, err := c.Get(ctx, "breaker#Bad Name"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("breaker#Bad Name after the approved clear: %v", err)
	}
	if got, err := svc.Get(ctx, r.ID); err != nil || got.Status != approval.StatusApplied || got.AppliedChange != res.Records[0].Change {
		t.Errorf("request after approval: %+v %v", got, err)
	}
}
