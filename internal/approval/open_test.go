package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The open requests are listed from the lists index, never a scan: the
// pending ones (a denied one is gone from the partition), each read again
// by key with its proofs and closed marker in one batch read, and checked
// against them; one put back into the partition by hand is flagged, and
// one decided after the index read it is left out.
func TestOpenRequestsAreListedWithoutAScan(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	submit := func() approval.Request {
		clk.Advance(time.Second)
		r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pending, denied, forged := submit(), submit(), submit()
	for _, id := range []string{denied.ID, forged.ID} {
		if _, _, err := svc.Decide(ctx, log, id, bob, false, "no"); err != nil {
			t.Fatal(err)
		}
	}
	// The requester's role puts the denied request back as pending, into
	// the partition: its closed marker says otherwise.
	it, err := c.s.Get(ctx, approval.RequestPrefix+forged.ID)
	if err != nil {
		t.Fatal(err)
	}
	it["status"], it[store.IndexLists.Attr], it[store.IndexLists.Sort] = approval.StatusPending, approval.OpenRequests, "9999999999999#"+forged.ID
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}

	c.reads.Store(0)
	c.scans.Store(0)
	c.queries.Store(0)
	l, err := svc.ListOpen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, q, r := c.scans.Load(), c.queries.Load(), c.reads.Load(); s != 0 || q != 2 || r != 3 {
		t.Errorf("%d scans, %d queries, %d reads in all; want none, 2 (requests, reviews), 3 (and one batch read)", s, q, r)
	}
	ids := map[string]approval.Request{}
	for _, r := range l.Requests {
		ids[r.ID] = r
	}
	if len(ids) != 2 || ids[pending.ID].Verification != (approval.Verification{}) || ids[forged.ID].Tampered == "" {
		t.Fatalf("listed %+v; want %s clean and %s flagged tampered, %s left out", l.Requests, pending.ID, forged.ID, denied.ID)
	}
	if _, ok := ids[denied.ID]; ok {
		t.Errorf("the denied request %s is listed", denied.ID)
	}

	// Decided between the index's answer and the read by key: left out,
	// not flagged.
	c.beforeBatch = func() {
		if _, _, err := svc.Decide(ctx, log, pending.ID, alice, true, "never mind"); err != nil {
			t.Error(err)
		}
	}
	l, err = svc.ListOpen(ctx)
	if err != nil || len(l.Requests) != 1 || l.Requests[0].ID != forged.ID {
		t.Fatalf("listed %+v, %v; want %s alone, %s canceled meanwhile left out", l.Requests, err, forged.ID, pending.ID)
	}
	all, err := svc.List(ctx)
	if err != nil || len(all.Requests) != 3 {
		t.Fatalf("--all lists %d requests, %v; want every one", len(all.Requests), err)
	}
}
