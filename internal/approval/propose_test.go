package approval_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/ratelimit"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// A proposal becomes a pending request whatever the policy says: under
// four eyes it waits for the policy's approval; where the policy (or its
// absence) would let the change through at once it still waits for one
// person. Nothing is forced, and the request's record names its source.
func TestProposalIsAlwaysARequest(t *testing.T) {
	ctx := context.Background()
	c, svc, log, _ := fourEyes(t)
	res, err := svc.Propose(ctx, log, approval.Proposal{Change: forceChange(), Requester: alice, Source: audit.SourceMCP})
	if err != nil {
		t.Fatal(err)
	}
	r, rec := res.Request, res.Record
	if r.Status != approval.StatusPending || r.Needed != 1 || len(r.Policies) == 0 {
		t.Errorf("request under four eyes: %+v", r)
	}
	if rec.Source != audit.SourceMCP || rec.Action != approval.ActionRequestCreate {
		t.Errorf("record: %+v", rec)
	}
	if _, err := c.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai after a proposal: %v, want no override", err)
	}

	// A bucket reset, which four-eyes.cedar allows at once, and a table
	// without a policy: one approval all the same.
	reset := approval.Change{Action: ratelimit.ActionReset, Targets: []string{"client-1"}, Reason: "r", Before: nil}
	if res, err := svc.Propose(ctx, log, approval.Proposal{Change: reset, Requester: alice}); err != nil || res.Request.Needed != 1 || len(res.Request.Policies) != 0 {
		t.Errorf("reset under a policy that allows it: %+v %v, want one approval", res, err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "n.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	bare := approval.NewService(s, clk, leversOn(s, clk, breaker.DurationPolicy{}), "test")
	res, err = bare.Propose(ctx, audit.NewLog(s, clk, "test"), approval.Proposal{Change: forceChange(), Requester: alice})
	r = res.Request
	if err != nil || r.Needed != 1 || r.Status != approval.StatusPending {
		t.Fatalf("proposal without a policy: %+v %v", r, err)
	}
	if _, err := s.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai after a proposal without a policy: %v, want no override", err)
	}

	// Nothing to change: no request.
	if _, err := svc.Propose(ctx, log, approval.Proposal{Change: approval.Change{Action: breaker.ActionClear}, Requester: alice}); !errors.Is(err, approval.ErrNothingToPropose) {
		t.Errorf("empty clear: %v, want ErrNothingToPropose", err)
	}
}

// A proposal no approval could apply in one transaction is refused at once,
// before it is stored (an agent naming 20,000 clients).
func TestProposalOfTooManyTargetsIsRefused(t *testing.T) {
	ctx := context.Background()
	_, svc, log, _ := fourEyes(t)
	many := make([]string, lever.MaxAttached+1)
	for i := range many {
		many[i] = fmt.Sprintf("client-%d", i)
	}
	_, err := svc.Propose(ctx, log, approval.Proposal{Change: approval.Change{Action: ratelimit.ActionReset, Targets: many, Reason: "r"},
		Requester: alice})
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "split it") {
		t.Errorf("proposal of %d targets: %v (exit %d), want a usage error", len(many), err, exitcode.Of(err))
	}
	if l, err := svc.List(ctx); err != nil || len(l.Requests) != 0 {
		t.Errorf("requests after the refusal: %+v %v", l, err)
	}
}
