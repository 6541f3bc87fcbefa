package approval_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
)

// askings counts the records of asking stored.
func askings(t *testing.T, c *counting) int {
	t.Helper()
	n := 0
	for _, err := range c.s.Scan(context.Background(), store.ScanQuery{Prefix: audit.RequestPrefix}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func pendingRequests(t *testing.T, svc *approval.Service) []approval.Request {
	t.Helper()
	l, err := svc.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []approval.Request
	for _, r := range l.Requests {
		if r.Status == approval.StatusPending {
			out = append(out, r)
		}
	}
	return out
}

// An agent in a loop: 25 identical proposals make one request with one
// record of asking; the other 24 return it, coalesced. Another reason,
// another requester, or the first request closed: a new request.
func TestIdenticalPendingProposalsCoalesce(t *testing.T) {
	ctx := context.Background()
	c, svc, log, _ := fourEyes(t)
	propose := func(who audit.Identity, ch approval.Change) approval.Proposed {
		t.Helper()
		res, err := svc.Propose(ctx, log, approval.Proposal{Change: ch, Requester: who, Source: audit.SourceMCP})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := propose(alice, forceChange())
	if first.Coalesced || first.Record.ID == "" {
		t.Fatalf("first proposal: %+v", first)
	}
	for i := range 24 {
		if again := propose(alice, forceChange()); !again.Coalesced || again.Request.ID != first.Request.ID || again.Record.ID != "" {
			t.Fatalf("identical proposal %d: %+v, want request %s coalesced", i+2, again, first.Request.ID)
		}
	}
	if n, rs := askings(t, c), pendingRequests(t, svc); n != 1 || len(rs) != 1 {
		t.Fatalf("after 25 identical proposals: %d records of asking, %d pending requests; want 1 and 1", n, len(rs))
	}

	other := forceChange()
	other.Reason = "another reason"
	if res := propose(alice, other); res.Coalesced {
		t.Error("a proposal with another reason was coalesced")
	}
	if res := propose(bob, forceChange()); res.Coalesced || res.Request.ID == first.Request.ID {
		t.Errorf("bob's identical proposal coalesced into alice's: %+v", res)
	}
	// Closed (alice cancels it): the next identical proposal asks again.
	if _, _, err := svc.Decide(ctx, log, first.Request.ID, alice, true, "not needed"); err != nil {
		t.Fatal(err)
	}
	if res := propose(alice, forceChange()); res.Coalesced || res.Request.ID == first.Request.ID {
		t.Errorf("after the request was canceled: %+v, want a new request", res)
	}
}

// Two identical proposals at once make one request: the second's write
// lands between the first's read and its write (the first then re-reads
// and returns the second's request); and eight at once from goroutines.
func TestIdenticalProposalsAtOnceMakeOneRequest(t *testing.T) {
	ctx := context.Background()
	c, svc, log, _ := fourEyes(t)
	var inner approval.Proposed
	var innerErr error
	c.beforeTx = func() {
		inner, innerErr = svc.Propose(ctx, log, approval.Proposal{Change: forceChange(), Requester: alice})
	}
	outer, err := svc.Propose(ctx, log, approval.Proposal{Change: forceChange(), Requester: alice})
	if err != nil || innerErr != nil {
		t.Fatal(err, innerErr)
	}
	if inner.Coalesced || !outer.Coalesced || outer.Request.ID != inner.Request.ID {
		t.Errorf("racing proposals: inner %+v, outer %+v; want the outer coalesced into the inner", inner, outer)
	}

	other := forceChange()
	other.Reason = "at once"
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			res, err := svc.Propose(ctx, log, approval.Proposal{Change: other, Requester: alice})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.Request.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Errorf("eight identical proposals at once made requests %v", ids)
			break
		}
	}
	if n := askings(t, c); n != 2 {
		t.Errorf("%d records of asking, want 2 (one per change)", n)
	}
}

// The budget: the 101st request of one identity in an hour (the default)
// is refused, saying when to retry (an RFC3339 time and seconds), and
// nothing is stored; once the oldest leaves the hour, one more passes.
// Coalesced proposals cost nothing; another identity has its own budget.
func TestProposalBudgetRefusesTheExcessWithARetryTime(t *testing.T) {
	ctx := context.Background()
	c, svc, log, clk := fourEyes(t)
	start := clk.Now()
	propose := func(who audit.Identity, reason string) (approval.Proposed, error) {
		ch := forceChange()
		ch.Reason = reason
		return svc.Propose(ctx, log, approval.Proposal{Change: ch, Requester: who, Source: audit.SourceMCP})
	}
	for i := range approval.DefaultProposalsPerHour {
		if _, err := propose(alice, fmt.Sprintf("reason %d", i)); err != nil {
			t.Fatalf("proposal %d: %v", i+1, err)
		}
		if _, err := propose(alice, fmt.Sprintf("reason %d", i)); err != nil { // coalesced: free
			t.Fatalf("proposal %d again: %v", i+1, err)
		}
		clk.Advance(10 * time.Second)
	}
	before := askings(t, c)
	_, err := propose(alice, "the 101st")
	var be *approval.BudgetError
	if !errors.As(err, &be) || exitcode.Of(err) != exitcode.Refused {
		t.Fatalf("the 101st proposal: %v (exit %d), want a budget refusal", err, exitcode.Of(err))
	}
	wantAt := start.Add(time.Hour)
	wantIn := wantAt.Sub(clk.Now())
	if !be.RetryAt.Equal(wantAt) || be.RetryIn != wantIn ||
		!strings.Contains(err.Error(), "retry at "+wantAt.Format(time.RFC3339)) || !strings.Contains(err.Error(), fmt.Sprintf("(in %d seconds)", int(wantIn.Seconds()))) {
		t.Errorf("refusal: %v (retry at %s in %s), want retry at %s in %s", err, be.RetryAt, be.RetryIn, wantAt, wantIn)
	}
	if n := askings(t, c); n != before {
		t.Errorf("the refused proposal wrote %d records", n-before)
	}
	// An identical pending proposal is still answered: it costs nothing.
	if res, err := propose(alice, "reason 99"); err != nil || !res.Coalesced {
		t.Errorf("a coalesced proposal over the budget: %+v %v", res, err)
	}
	if _, err := propose(bob, "bob's own"); err != nil {
		t.Errorf("bob's first proposal: %v", err)
	}
	clk.Set(wantAt.Add(-time.Second))
	if _, err := propose(alice, "a second early"); !errors.Is(err, approval.ErrBudgetSpent) {
		t.Errorf("a second before the retry time: %v", err)
	}
	clk.Set(wantAt)
	if _, err := propose(alice, "on time"); err != nil {
		t.Errorf("at the retry time: %v", err)
	}
	// A smaller budget of the context's.
	if _, err := svc.Propose(ctx, log, approval.Proposal{Change: forceChange(), Requester: bob, PerHour: 1}); !errors.Is(err, approval.ErrBudgetSpent) {
		t.Errorf("bob's second proposal under a budget of 1: %v", err)
	}
}
