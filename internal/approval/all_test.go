package approval_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

// collect lists q page by page and returns the requests (or reviews) ids
// in the order handed, and the pages' sizes.
func collect(t *testing.T, svc *approval.Service, q approval.ListQuery) (ids []string, sizes []int) {
	t.Helper()
	err := svc.ListPages(context.Background(), q, func(l approval.Listing) error {
		sizes = append(sizes, len(l.Requests)+len(l.Reviews))
		for _, r := range l.Requests {
			if r.Verification != (approval.Verification{}) {
				t.Errorf("%s: %+v; want it clean", r.ID, r.Verification)
			}
			ids = append(ids, r.ID)
		}
		for _, r := range l.Reviews {
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, sizes
}

// gather lists q and returns its pages as one listing.
func gather(t *testing.T, svc *approval.Service, q approval.ListQuery) approval.Listing {
	t.Helper()
	var all approval.Listing
	err := svc.ListPages(context.Background(), q, func(l approval.Listing) error {
		all.Requests = append(all.Requests, l.Requests...)
		all.Reviews = append(all.Reviews, l.Reviews...)
		all.Unreadable = append(all.Unreadable, l.Unreadable...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// Every request, decided or not, is listed by --all from the lists index
// (the open partition and the closed one, read at once and merged newest
// first), a page at a time, in the order the scan of the whole table
// sorted: two queries, a batch read per page, no scan.
func TestAllRequestsAreListedWithoutAScan(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	for i := range approval.OpenPage + 1 {
		clk.Advance(time.Second)
		r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if _, _, err := svc.Decide(ctx, log, r.ID, bob, false, "no"); err != nil {
				t.Fatal(err)
			}
		}
	}
	scanned, err := svc.List(ctx)
	if err != nil || len(scanned.Requests) != approval.OpenPage+1 {
		t.Fatalf("List: %d requests, %v", len(scanned.Requests), err)
	}

	c.reads.Store(0)
	c.scans.Store(0)
	c.queries.Store(0)
	ids, sizes := collect(t, svc, approval.ListQuery{All: true})
	if len(sizes) != 2 || sizes[0] != approval.OpenPage || sizes[1] != 1 {
		t.Fatalf("pages of %v requests; want [%d 1]", sizes, approval.OpenPage)
	}
	for i, r := range scanned.Requests {
		if ids[i] != r.ID {
			t.Fatalf("--all's %dth is %s; want %s (newest first, as the scan sorted)", i, ids[i], r.ID)
		}
	}
	if s, q, r := c.scans.Load(), c.queries.Load(), c.reads.Load(); s != 0 || q != 2 || r != 4 {
		t.Errorf("%d scans, %d queries, %d reads; want none, 2 (open and closed), 4 (and a batch read per page)", s, q, r)
	}

	// The open list is the pending ones alone.
	open, _ := collect(t, svc, approval.ListQuery{})
	if len(open) != approval.OpenPage/2+1 {
		t.Errorf("the open list has %d requests; want the %d pending", len(open), approval.OpenPage/2+1)
	}

	// Resumed at a cursor: what is older, no more.
	cut := scanned.Requests[9]
	rest, _ := collect(t, svc, approval.ListQuery{All: true, Before: approval.Cursor(cut.CreatedAt, cut.ID)})
	if len(rest) != len(scanned.Requests)-10 || rest[0] != scanned.Requests[10].ID {
		t.Errorf("after %s: %d requests from %v; want the %d older, from %s", cut.ID, len(rest), rest[:1], len(scanned.Requests)-10, scanned.Requests[10].ID)
	}
	if err := svc.ListPages(ctx, approval.ListQuery{Before: "yesterday"}, func(approval.Listing) error { return nil }); err == nil {
		t.Error("a cursor no listing returned was taken")
	}
}

// A request decided before the closed partition existed (its item out of
// the lists index) is missing from --all until store migrate's backfill
// puts it there; the backfill rewrites it once, a dry run counts it and
// changes nothing.
func TestBackfillPutsOldDecidedRequestsInTheIndex(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	var ids []string
	for range 3 {
		clk.Advance(time.Second)
		r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	old := ids[0]
	if _, _, err := svc.Decide(ctx, log, old, bob, false, "no"); err != nil {
		t.Fatal(err)
	}
	// As the item was written before: decided, in no partition.
	it, err := c.s.Get(ctx, approval.RequestPrefix+old)
	if err != nil {
		t.Fatal(err)
	}
	delete(it, store.IndexLists.Attr)
	delete(it, store.IndexLists.Sort)
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}
	if got, _ := collect(t, svc, approval.ListQuery{All: true}); len(got) != 2 {
		t.Fatalf("--all before the backfill: %v; want the two indexed", got)
	}

	rep, err := svc.Backfill(ctx, true, nil, nil)
	if err != nil || rep.Examined != 3 || rep.Updated != 1 {
		t.Fatalf("dry run: %+v, %v; want 3 examined, 1 to update", rep, err)
	}
	if got, _ := collect(t, svc, approval.ListQuery{All: true}); len(got) != 2 {
		t.Fatalf("--all after a dry run: %v; want it unchanged", got)
	}
	if rep, err = svc.Backfill(ctx, false, nil, nil); err != nil || rep.Updated != 1 {
		t.Fatalf("backfill: %+v, %v; want 1 updated", rep, err)
	}
	got, _ := collect(t, svc, approval.ListQuery{All: true})
	if len(got) != 3 || got[2] != old {
		t.Fatalf("--all after the backfill: %v; want all three, %s last (oldest)", got, old)
	}
	if open, _ := collect(t, svc, approval.ListQuery{}); len(open) != 2 {
		t.Errorf("the open list after the backfill: %v; want the two pending", open)
	}
	if rep, err = svc.Backfill(ctx, false, nil, nil); err != nil || rep.Updated != 0 {
		t.Errorf("backfill again: %+v, %v; want nothing to update", rep, err)
	}
}

// Reviews that name no proof (made before proofs) on several pages cost
// the listing one scan of the proofs, not one a page.
func TestReviewsNamingNoProofScanTheProofsOnce(t *testing.T) {
	c, svc, _, clk := fourEyes(t)
	ctx := context.Background()
	n := approval.OpenPage + 5
	for i := range n {
		created := clk.Now().Add(time.Duration(i) * time.Second)
		id := fmt.Sprintf("rev-%03d", i)
		it := store.Item{store.PK: approval.ReviewPrefix + id, "action": "breaker.force-open", "targets": "openai", "reason": "fire",
			"actor": "dana", "created_at": created.UnixMilli(), "status": approval.ReviewOpen, store.WriteIDAttr: "w-" + id,
			store.IndexLists.Attr: approval.OpenReviews, store.IndexLists.Sort: approval.Cursor(created, id)}
		if err := c.s.Put(ctx, it, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	c.scans.Store(0)
	var listed, unproven int
	err := svc.ListPages(ctx, approval.ListQuery{Reviews: true}, func(l approval.Listing) error {
		for _, r := range l.Reviews {
			listed++
			if r.Unproven != "" {
				unproven++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if listed != n || unproven != n {
		t.Fatalf("%d reviews listed, %d unproven; want %d, all unproven", listed, unproven, n)
	}
	if s := c.scans.Load(); s != 1 {
		t.Errorf("%d scans of the proofs over two pages; want 1", s)
	}
}
