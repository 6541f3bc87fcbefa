package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
)

// An edit of a request item after it was made (Flagsmith #4465: an edited
// approved request shipped unapproved changes) is never applied: the stored
// change no longer hashes to the stored hash.
func TestEditedRequestIsNeverApplied(t *testing.T) {
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
	it["change"] = `{"action":"breaker.force-open","targets":["openai","core-api"],"reason":"provider incident","for_seconds":1800,"before":{"core-api":null,"openai":null}}`
	if err := c.s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); !errors.Is(err, approval.ErrHashMismatch) {
		t.Fatalf("approve of an edited request: %v, want ErrHashMismatch", err)
	}
	if _, err := c.Get(ctx, "breaker#core-api"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("core-api forced by an edited request: %v", err)
	}
}

// A lever changed by someone else after the request was made is a
// conflict: the approval applies the change from the state reviewed, or not
// at all, and the request stays pending.
func TestApprovalIsConditionalOnTheStateRequested(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := c.s.Put(ctx, store.Item{store.PK: "breaker#openai", "state": "forced_open", "reason": "someone else", "actor": "carol",
		"created_at": clk.Now().UnixMilli(), "version": int64(1)}, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("approve after someone forced openai: %v, want a conflict", err)
	}
	got, err := svc.Get(ctx, r.ID)
	if err != nil || got.Status != approval.StatusPending {
		t.Errorf("request after a refused approval: %+v %v, want pending", got, err)
	}
}

// The approval's result names the change that applied the request, as the
// stored request does (request approve -o json shows it).
func TestApprovalReportsTheChangeThatAppliedIt(t *testing.T) {
	c, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
	if err != nil || !res.Applied {
		t.Fatalf("approve: %+v, %v", res, err)
	}
	stored, err := c.Get(ctx, approval.RequestPrefix+r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Request.AppliedChange == "" || res.Request.AppliedChange != stored.Str("applied_change") {
		t.Errorf("result's applied_change %q, stored %q: want the same token", res.Request.AppliedChange, stored.Str("applied_change"))
	}
}

// A request whose --until has passed by the time it is approved is not
// applied as an override already lapsed (reported "forced open" for a
// lever that never held): the lever service refuses it, nothing is
// written, and the approver is told to deny it.
func TestApprovalAfterTheRequestedExpiryWritesNothing(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	ch := forceChange()
	ch.Params = json.RawMessage(`{"until":"` + clk.Now().Add(10*time.Minute).UTC().Format(time.RFC3339Nano) + `"}`)
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: ch, Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Minute)
	_, err = svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
	if !errors.Is(err, breaker.ErrExpiryPast) || !strings.Contains(err.Error(), "koshactl request deny "+r.ID) {
		t.Fatalf("approve after the requested expiry: %v, want the expiry refused with the deny command", err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai forced after its requested expiry: %v", err)
	}
	if got, err := svc.Get(ctx, r.ID); err != nil || got.Status != approval.StatusPending {
		t.Errorf("request after a refused approval: %+v %v, want pending", got, err)
	}
}

// The approver's context applies its own max-override: a request for longer
// is refused there, with where it can be approved, and nothing is written.
func TestApprovalPastTheApproversMaxOverrideSaysWhere(t *testing.T) {
	c, _, log, clk := fourEyes(t)
	ctx := context.Background()
	svc := approval.NewService(c, clk, leversOn(c, clk, breaker.DurationPolicy{Max: time.Hour}), "test")
	ch := forceChange()
	ch.Params = json.RawMessage(`{"for_seconds":7200}`)
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: ch, Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
	if !errors.Is(err, breaker.ErrDurationTooLong) || !strings.Contains(err.Error(), "approve it from a context whose max-override allows it") {
		t.Fatalf("approve of 2h under a 1h max-override: %v", err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai forced past the approver's max-override: %v", err)
	}
}

// A deny racing an approval: whichever lands first decides, and the other
// writes nothing (both are conditional on the request as read, and the
// closed marker on its key): never a change applied on a denied request,
// nor a deny recorded on an applied one.
func TestDenyRacingAnApprovalDecidesOnce(t *testing.T) {
	c, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	for round := range 10 {
		r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var approveErr, denyErr error
		var res approval.Approved
		wg.Go(func() {
			res, approveErr = svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
		})
		wg.Go(func() { _, _, denyErr = svc.Decide(ctx, log, r.ID, carol, false, "not now") })
		wg.Wait()
		applied := approveErr == nil && res.Applied
		denied := denyErr == nil
		if applied == denied {
			t.Fatalf("round %d: applied %v (%v), denied %v (%v): want exactly one", round, applied, approveErr, denied, denyErr)
		}
		got, err := svc.Get(ctx, r.ID)
		if err != nil || got.Tampered != "" {
			t.Fatalf("round %d: request after the race: %+v, %v", round, got, err)
		}
		_, forced := c.s.Get(ctx, "breaker#openai")
		if (forced == nil) != applied || (got.Status == approval.StatusApplied) != applied {
			t.Fatalf("round %d: applied %v, override present %v, status %s", round, applied, forced == nil, got.Status)
		}
		if applied {
			if _, _, err := levertest.Clear(ctx, c, nil, log, "openai", "admin", "next round"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// What the item says of approvers counts for nothing: an item that drops
// an approval or names one nobody made is tampered, and the approval that
// would apply it is refused.
func TestApproversComeFromProofs(t *testing.T) {
	c, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	setPolicy(t, c, log, twoEyes)
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 2}})
	if err != nil {
		t.Fatal(err)
	}
	// dave never approved: the item names him.
	it, err := c.Get(ctx, approval.RequestPrefix+r.ID)
	if err != nil {
		t.Fatal(err)
	}
	planted := it.Clone()
	planted["approvers"] = `["arn:aws:iam::123456789012:user/dave"]`
	if err := c.s.Put(ctx, planted, store.Always()); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); !errors.Is(err, approval.ErrTampered) {
		t.Fatalf("approval of a request naming an approver without a proof: %v, want ErrTampered", err)
	}
	// dave's approval named by its key, without dave's proof: refused in
	// the approval's own transaction.
	planted = it.Clone()
	planted["approvers"] = `["arn:aws:iam::123456789012:user/dave"]`
	planted["proofs"] = `["` + it.Str("proofs")[2:len(it.Str("proofs"))-2] + `","proof#AIDADAVE#approve#arn:aws:iam::123456789012:user/dave#request#` + r.ID + `"]`
	if err := c.s.Put(ctx, planted, store.Always()); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256}); !errors.Is(err, approval.ErrTampered) {
		t.Fatalf("approval counting a proof that does not exist: %v, want ErrTampered", err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai forced on a planted approval: %v", err)
	}
}

// A deny that lands between an approval's read and its write: the approval
// writes nothing and says the request was closed (exit 13), never that it
// was applied.
func TestApprovalOvertakenByADenySaysClosed(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	ctx := context.Background()
	r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
		Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	other := approval.NewService(c.s, clk, leversOn(c.s, clk, breaker.DurationPolicy{}), "test")
	c.beforeTx = func() {
		if _, _, err := other.Decide(ctx, log, r.ID, carol, false, "not now"); err != nil {
			t.Errorf("carol's deny: %v", err)
		}
	}
	res, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
	if !errors.Is(err, approval.ErrClosed) || res.AlreadyApplied || res.Applied {
		t.Fatalf("approval overtaken by a deny: %+v, %v; want ErrClosed, nothing applied", res, err)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai forced after the deny: %v", err)
	}
}

// Requests made before koshactl kept proofs carry none: a pending one is
// refused with the way out (ask again), and still denied; one decided then
// reads as it was.
func TestRequestsWithoutProofsAreRefused(t *testing.T) {
	c, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	for _, status := range []string{approval.StatusPending, approval.StatusApplied} {
		r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		it, err := c.Get(ctx, approval.RequestPrefix+r.ID)
		if err != nil {
			t.Fatal(err)
		}
		delete(it, "proofs") // as an older koshactl wrote it
		it["status"] = status
		if err := c.s.Put(ctx, it, store.Always()); err != nil {
			t.Fatal(err)
		}
		res, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
		if status == approval.StatusApplied {
			if err != nil || !res.AlreadyApplied {
				t.Errorf("an applied request without proofs: %+v, %v; want already applied", res, err)
			}
			continue
		}
		if !errors.Is(err, approval.ErrApprovalUnproven) || !strings.Contains(err.Error(), "ask for it again") {
			t.Errorf("a pending request without proofs: %v, want it refused, saying to ask again", err)
		}
		if got, err := svc.Get(ctx, r.ID); err != nil || got.Unproven == "" || got.Tampered != "" {
			t.Errorf("request show of it: %+v, %v; want it unproven", got.Verification, err)
		}
		if _, _, err := svc.Decide(ctx, log, r.ID, carol, false, "old"); err != nil {
			t.Errorf("denying a request without proofs: %v", err)
		}
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai forced by a request without proofs: %v", err)
	}
}
