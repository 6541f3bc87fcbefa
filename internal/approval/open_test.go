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
	l := gather(t, svc, approval.ListQuery{})
	if s, q, r := c.scans.Load(), c.queries.Load(), c.reads.Load(); s != 0 || q != 1 || r != 2 {
		t.Errorf("%d scans, %d queries, %d reads in all; want none, 1 (the open requests), 2 (and one batch read)", s, q, r)
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
	l = gather(t, svc, approval.ListQuery{})
	if len(l.Requests) != 1 || l.Requests[0].ID != forged.ID {
		t.Fatalf("listed %+v; want %s alone, %s canceled meanwhile left out", l.Requests, forged.ID, pending.ID)
	}
	all, err := svc.List(ctx)
	if err != nil || len(all.Requests) != 3 {
		t.Fatalf("--all lists %d requests, %v; want every one", len(all.Requests), err)
	}
}

// A long list of open requests is handed over a page at a time, each page
// before the index is read past it (so `request list` prints it before it
// reads the next, holding one page), newest first, each page read
// with its proofs in one batch read, and no scan.
func TestOpenRequestsAreListedPageByPage(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	for range approval.OpenPage + 1 {
		clk.Advance(time.Second)
		if _, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	whole, err := svc.List(ctx)
	if err != nil || len(whole.Requests) != approval.OpenPage+1 {
		t.Fatalf("List: %d requests, %v; want %d", len(whole.Requests), err, approval.OpenPage+1)
	}

	c.yielded.Store(0)
	c.reads.Store(0)
	c.scans.Store(0)
	var sizes []int
	var got []string
	err = svc.ListPages(ctx, approval.ListQuery{}, func(l approval.Listing) error {
		// The partition's reader runs ahead of the merge by one item
		// (store.NewestFirst), no more.
		if len(sizes) == 0 && c.yielded.Load() > approval.OpenPage+1 {
			t.Errorf("the first page was handed over after the index yielded %d items; want it before the %dth", c.yielded.Load(), approval.OpenPage+2)
		}
		sizes = append(sizes, len(l.Requests))
		for _, r := range l.Requests {
			if r.Verification != (approval.Verification{}) {
				t.Errorf("%s: %+v; want it clean", r.ID, r.Verification)
			}
			got = append(got, r.ID)
		}
		if len(l.Reviews) != 0 || len(l.Unreadable) != 0 {
			t.Errorf("page: %d reviews, %d unreadable; want the requests alone", len(l.Reviews), len(l.Unreadable))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0] != approval.OpenPage || sizes[1] != 1 {
		t.Fatalf("pages of %v requests; want [%d 1]", sizes, approval.OpenPage)
	}
	for i, r := range whole.Requests {
		if got[i] != r.ID {
			t.Fatalf("page order: %dth is %s; want %s (the scan's, sorted newest first)", i, got[i], r.ID)
		}
	}
	// One query, and a batch read per page.
	if s, r := c.scans.Load(), c.reads.Load(); s != 0 || r != 3 {
		t.Errorf("%d scans, %d reads; want none, 3 (the query and a batch read per page)", s, r)
	}
}
