package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A request past its expiry is marked expired by the first listing that
// sees it, once: two listings that read it pending (bob's and carol's,
// racing) mark it once between them, with one audit record; a request not
// yet expired is left alone, and nobody's identity is asked for when
// nothing is due.
func TestExpireDueMarksOnceWhoeverSeesItFirst(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	sub := approval.Submission{Change: forceChange(), Requester: alice, Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1},
		TTL: time.Minute}
	old, _, err := svc.Submit(ctx, log, sub)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	sub.TTL = time.Hour
	young, _, err := svc.Submit(ctx, log, sub)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	as := func(id audit.Identity) func(context.Context) (audit.Identity, error) {
		return func(context.Context) (audit.Identity, error) { asked++; return id, nil }
	}
	seen := func() []approval.Request {
		l, err := svc.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l.Requests
	}
	if marked, err := svc.ExpireDue(ctx, log, as(bob), seen()); err != nil || len(marked) != 0 || asked != 0 {
		t.Fatalf("nothing due: marked %v, err %v, identity asked %d times", marked, err, asked)
	}
	clk.Advance(time.Minute)
	bobs, carols := seen(), seen()
	marked, err := svc.ExpireDue(ctx, log, as(bob), bobs)
	if err != nil || len(marked) != 1 || marked[0].ID != old.ID || marked[0].Status != approval.StatusExpired || marked[0].DecidedBy != bob.Actor {
		t.Fatalf("bob's listing marked %+v, %v; want %s expired by bob", marked, err, old.ID)
	}
	carol := audit.Identity{Actor: "arn:aws:iam::123456789012:user/carol", Source: audit.ActorSTS, UserID: "AIDACAROL"}
	if marked, err := svc.ExpireDue(ctx, log, as(carol), carols); err != nil || len(marked) != 0 {
		t.Fatalf("carol's listing, read before bob marked it: marked %+v, %v; want nothing (bob saw it first)", marked, err)
	}
	if got, err := svc.Get(ctx, young.ID); err != nil || got.Status != approval.StatusPending {
		t.Errorf("the young request: %+v %v, want pending", got, err)
	}
	n := 0
	for it, err := range c.s.Scan(ctx, store.ScanQuery{Prefix: "audit#"}) {
		if err != nil {
			t.Fatal(err)
		}
		if it.Str("action") == approval.ActionRequestExpire {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d request.expire records, want 1", n)
	}
}
