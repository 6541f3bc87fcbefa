package approval_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

// asked is alice's pending request, a second after the last.
func asked(t *testing.T, svc *approval.Service, log audit.Appender, clk *clocktest.Fake) approval.Request {
	t.Helper()
	clk.Advance(time.Second)
	r, _, err := svc.Submit(context.Background(), log, approval.Submission{Change: forceChange(), Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// verified lists q and returns each listed request's verification by id.
func verified(t *testing.T, svc *approval.Service, q approval.ListQuery) map[string]approval.Verification {
	t.Helper()
	got := map[string]approval.Verification{}
	for _, r := range gather(t, svc, q).Requests {
		got[r.ID] = r.Verification
	}
	return got
}

// The requester's role may write a request's item whole, its lists index
// attributes too (IAM limits which attributes, never their values). A
// pending request it puts among the closed ones (out of the open list) is
// flagged by --all, and one it puts at another request's place in the
// index (its sort key) neither hides that request nor passes unflagged.
func TestRequestsOutOfTheirPlaceInTheIndexAreFlagged(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	hidden, shadowed, shadow := asked(t, svc, log, clk), asked(t, svc, log, clk), asked(t, svc, log, clk)

	it, err := c.s.Get(ctx, approval.RequestPrefix+hidden.ID)
	if err != nil {
		t.Fatal(err)
	}
	it[store.IndexLists.Attr] = approval.ClosedRequests
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}
	it, err = c.s.Get(ctx, approval.RequestPrefix+shadow.ID)
	if err != nil {
		t.Fatal(err)
	}
	it[store.IndexLists.Sort] = approval.Cursor(shadowed.CreatedAt, shadowed.ID)
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}

	all := verified(t, svc, approval.ListQuery{All: true})
	if v, ok := all[hidden.ID]; !ok || !strings.Contains(v.Tampered, approval.ClosedRequests) {
		t.Errorf("--all: the pending request put among the closed ones: %+v (listed %v); want it flagged tampered", v, ok)
	}
	if v, ok := all[shadowed.ID]; !ok || v != (approval.Verification{}) {
		t.Errorf("--all: the request whose place another took: %+v (listed %v); want it listed, clean", v, ok)
	}
	if v, ok := all[shadow.ID]; !ok || !strings.Contains(v.Tampered, "not where its creation puts it") {
		t.Errorf("--all: the request listed at another's place: %+v (listed %v); want it flagged tampered", v, ok)
	}
	open := verified(t, svc, approval.ListQuery{})
	if v, ok := open[shadowed.ID]; !ok || v != (approval.Verification{}) {
		t.Errorf("the open list: the request whose place another took: %+v (listed %v); want it listed, clean", v, ok)
	}
}

// store migrate's backfill reads each item's status, a summary the
// requester's role may write: it never takes an item out of the open
// partition (a pending request set to "denied" stays in the open list,
// flagged), it puts back there a pending one put among the closed, and a
// forged decided item it places (out of any partition) is listed by
// --all as what it is, never clean.
func TestBackfillTrustsNoStatusItReads(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	revived, unindexed, returned := asked(t, svc, log, clk), asked(t, svc, log, clk), asked(t, svc, log, clk)

	it, err := c.s.Get(ctx, approval.RequestPrefix+revived.ID)
	if err != nil {
		t.Fatal(err)
	}
	it["status"], it["decided_by"] = approval.StatusDenied, bob.Actor
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}
	it, err = c.s.Get(ctx, approval.RequestPrefix+unindexed.ID)
	if err != nil {
		t.Fatal(err)
	}
	it["status"], it["decided_by"], it["approvers"] = approval.StatusApplied, bob.Actor, `["`+bob.Actor+`"]`
	delete(it, store.IndexLists.Attr)
	delete(it, store.IndexLists.Sort)
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}

	it, err = c.s.Get(ctx, approval.RequestPrefix+returned.ID)
	if err != nil {
		t.Fatal(err)
	}
	it[store.IndexLists.Attr] = approval.ClosedRequests
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}

	rep, err := svc.Backfill(ctx, false, nil, nil)
	if err != nil || rep.Updated != 2 {
		t.Fatalf("backfill: %+v, %v; want two placed: the unindexed, the pending one among the closed", rep, err)
	}
	if v, ok := verified(t, svc, approval.ListQuery{})[returned.ID]; !ok || v != (approval.Verification{}) {
		t.Errorf("the open list after the backfill: the pending request put among the closed: %+v (listed %v); want it back, clean", v, ok)
	}
	if it, _ := c.s.Get(ctx, approval.RequestPrefix+revived.ID); it.Str(store.IndexLists.Attr) != approval.OpenRequests {
		t.Errorf("the backfill moved the pending request said denied to %q; want it left in %q", it.Str(store.IndexLists.Attr), approval.OpenRequests)
	}
	if v, ok := verified(t, svc, approval.ListQuery{})[revived.ID]; !ok || v.Tampered == "" {
		t.Errorf("the open list after the backfill: the pending request said denied: %+v (listed %v); want it listed, tampered", v, ok)
	}
	if v, ok := verified(t, svc, approval.ListQuery{All: true})[unindexed.ID]; !ok || v.Tampered == "" {
		t.Errorf("--all after the backfill: the request said applied: %+v (listed %v); want it listed, tampered", v, ok)
	}
}

// A cursor comes from an MCP client: anything that is not one a listing
// could hand out (not UTF-8, or not "<13 digits>#<id>" within the sort
// key's size) is a one-line usage error (exit 2) showing it escaped, and
// nothing is read. (An id written around koshactl may hold any text, so a
// cursor's id is taken as it is: a bound value, never query text.)
func TestCraftedCursorsAreUsageErrors(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	asked(t, svc, log, clk)
	for _, cur := range []string{"yesterday", "0000000000000#", "#abc", "+000000000001#a", "00000000000001#a",
		"0000000000001#\xff\xfe", "yester\x1b]0;owned\a\nday", "0000000000001#" + strings.Repeat("a", 2000)} {
		c.reads.Store(0)
		c.queries.Store(0)
		err := svc.ListPages(context.Background(), approval.ListQuery{All: true, Before: cur}, func(approval.Listing) error { return nil })
		switch {
		case exitcode.Of(err) != exitcode.Usage:
			t.Errorf("cursor %q: %v (exit %d); want a usage error", cur, err, exitcode.Of(err))
		case strings.ContainsAny(err.Error(), "\n\x1b\a") || !utf8.ValidString(err.Error()):
			t.Errorf("cursor %q: the error shows it raw: %q", cur, err.Error())
		case c.queries.Load() != 0 || c.reads.Load() != 0:
			t.Errorf("cursor %q: read the table", cur)
		}
	}
}
