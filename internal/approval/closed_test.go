package approval_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// Every way a request closes (denied, canceled, expired, applied, a drill
// approved) writes its closed marker with the attributes the IAM policies
// let a marker have, and no ttl: DynamoDB's TTL never deletes it, so a
// decided request set back to pending stays decided, however long after.
func TestClosedMarkersAreNeverCollected(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	ask := func() approval.Request {
		r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice, TTL: 10 * time.Minute,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var ids []string
	r := ask()
	if _, _, err := svc.Decide(ctx, log, r.ID, bob, false, "no"); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, r.ID)
	r = ask()
	if _, _, err := svc.Decide(ctx, log, r.ID, alice, true, "never mind"); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, r.ID)
	r = ask()
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, r.ID)
	d, _, err := svc.SubmitDrill(ctx, log, gameDay, alice, "game day", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: d.ID, Approver: bob, SHA256: d.SHA256}); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, d.ID)
	r = ask()
	clk.Advance(11 * time.Minute)
	if r, err = svc.Get(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if marked, err := svc.ExpireDue(ctx, log, asks(bob), []approval.Request{r}); err != nil || len(marked) != 1 {
		t.Fatalf("expire: %v, %v", marked, err)
	}
	ids = append(ids, r.ID)
	for _, id := range ids {
		it, err := c.Get(ctx, approval.ClosedKey(id))
		if err != nil {
			t.Fatalf("closed marker of %s (%d of %v): %v", id, slices.Index(ids, id), ids, err)
		}
		if got := slices.Sorted(maps.Keys(it)); !slices.Equal(got, iam.ClosedAttributes) {
			t.Errorf("closed marker of %s has the attributes %v, want %v (no ttl)", id, got, iam.ClosedAttributes)
		}
	}
}
