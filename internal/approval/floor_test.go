package approval_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// bare is a table without a policy, counted.
func bare(t *testing.T) (*counting, *audit.Log, *clocktest.Fake) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	c := &counting{s: s}
	return c, audit.NewLog(c, clk, "test"), clk
}

func guardOn(c *counting, clk clock.Clock, log *audit.Log, id audit.Identity) *approval.Guard {
	levers := leversOn(c, clk, breaker.DurationPolicy{}).WithLog(log)
	return approval.NewService(c, clk, levers, "test").Guard(levers, func(context.Context) (audit.Identity, error) { return id, nil }, "")
}

func aliceForce() lever.Change {
	c := breaker.ForceOpen("provider incident", breaker.ForceParams{For: 30 * time.Minute}, "openai")
	c.Actor = alice.Actor
	return c
}

// With nothing in force and no policy, a force through the guard is one
// transaction and no read: the override written only if absent, its
// record, and the check that the table has no policy.
func TestAForceWithNothingInForceIsOneTransaction(t *testing.T) {
	c, log, clk := bare(t)
	rep, err := lever.Do(context.Background(), guardOn(c, clk, log, alice), aliceForce(), nil)
	if err != nil || len(rep.Written()) != 1 || rep.Written()[0].Record.Approval != nil {
		t.Fatalf("%+v %v; want written, no approval recorded", rep, err)
	}
	if r, tx, ch := c.reads.Load(), c.txs.Load(), c.checks.Load(); r != 0 || tx != 1 || ch != 1 {
		t.Errorf("%d reads, %d transactions, %d checks; want 0, 1 (the override, its record), 1 (no policy)", r, tx, ch)
	}
}

// Under a policy, the floor's transaction is refused by the policy's
// check, and the guard decides on the policy as the refusal showed it,
// reading nothing: a force four eyes hold becomes a request, nothing
// written; two transactions in all, as a read and the request were.
func TestUnderAPolicyTheFloorRefusalIsTheRead(t *testing.T) {
	c, svc, log, clk := fourEyes(t)
	levers := leversOn(c, clk, breaker.DurationPolicy{}).WithLog(log)
	g := svc.Guard(levers, func(context.Context) (audit.Identity, error) { return alice, nil }, "")
	c.reads.Store(0)
	c.txs.Store(0)
	rep, err := lever.Do(context.Background(), g, aliceForce(), nil)
	var pe *lever.PendingError
	if !errors.As(err, &pe) || rep.Pending == nil {
		t.Fatalf("%+v %v; want the force pending approval", rep, err)
	}
	if _, err := c.s.Get(context.Background(), "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a held force was written: %v", err)
	}
	if r, tx := c.reads.Load(), c.txs.Load(); r != 0 || tx != 2 {
		t.Errorf("%d reads, %d transactions; want 0 and 2 (the refused force, the request)", r, tx)
	}
}

// A policy set after the plan and before its transaction stops it: the
// policy's absence is a condition of the write, so four eyes hold the
// force, which becomes a request; approval never fails open.
func TestAPolicySetMeanwhileHoldsTheForce(t *testing.T) {
	c, log, clk := bare(t)
	c.beforeTx = func() { setPolicy(t, c, log, twoEyes) }
	rep, err := lever.Do(context.Background(), guardOn(c, clk, log, alice), aliceForce(), nil)
	var pe *lever.PendingError
	if !errors.As(err, &pe) || rep.Pending == nil || rep.Pending.Needed != 2 {
		t.Fatalf("%+v %v; want the force pending its two approvals", rep, err)
	}
	if _, err := c.s.Get(context.Background(), "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a force a policy set meanwhile holds was written: %v", err)
	}
}

// An override someone else holds refuses the force on the item the
// refusal showed, without another read, as a read's plan refuses it: no
// outcome, the conflict naming its holder.
func TestAHeldOverrideRefusesTheForceWithoutARead(t *testing.T) {
	c, log, clk := bare(t)
	held := breaker.ForceOpen("mine", breaker.ForceParams{For: time.Hour}, "openai")
	held.Actor = bob.Actor
	if _, err := lever.Do(context.Background(), guardOn(c, clk, log, bob), held, nil); err != nil {
		t.Fatal(err)
	}
	c.reads.Store(0)
	c.txs.Store(0)
	rep, err := lever.Do(context.Background(), guardOn(c, clk, log, alice), aliceForce(), nil)
	var ce *breaker.ConflictError
	if !errors.As(err, &ce) || ce.Current.Actor != bob.Actor || len(rep.Outcomes) != 0 {
		t.Fatalf("%+v %v; want refused whole, naming bob", rep, err)
	}
	if r, tx := c.reads.Load(), c.txs.Load(); r != 0 || tx != 1 {
		t.Errorf("%d reads, %d transactions; want 0 and 1", r, tx)
	}
}

// overridden forces n dependencies open as bob on c's table, uncounted,
// and returns the table's overrides service.
func overridden(t *testing.T, c *counting, clk *clocktest.Fake, log *audit.Log, n int) *breaker.Overrides {
	t.Helper()
	deps := make([]string, n)
	for i := range deps {
		deps[i] = fmt.Sprintf("dep-%03d", i)
	}
	held := breaker.ForceOpen("mine", breaker.ForceParams{For: time.Hour}, deps...)
	held.Actor, held.Chunked = bob.Actor, true
	c.off.Store(true)
	defer c.off.Store(false)
	if _, err := lever.Do(context.Background(), guardOn(c, clk, log, bob), held, nil); err != nil {
		t.Fatal(err)
	}
	return breaker.NewOverrides(c, clk)
}

// clear --all reads what the guard decides on (the table's policy) beside
// its scan, and nothing after it: with no policy, each transaction checks
// that there still is none, with room for the check (60 overrides are two
// transactions of at most 100 writes, not a first one of 101 the store
// refuses).
func TestClearAllReadsThePolicyBesideItsScan(t *testing.T) {
	c, log, clk := bare(t)
	ov := overridden(t, c, clk, log, 60)
	g := guardOn(c, clk, log, alice)
	ch, err := ov.ClearAll(context.Background(), "incident over", g.Reads()...)
	if err != nil || len(ch.Targets) != 60 {
		t.Fatalf("%d targets, %v; want 60", len(ch.Targets), err)
	}
	if r, s := c.reads.Load(), c.scans.Load(); r != 2 || s != 1 {
		t.Errorf("%d reads (%d scans); want 2: the scan and, beside it, the policy", r, s)
	}
	c.reads.Store(0)
	rep, err := lever.Do(context.Background(), g, ch, nil)
	if err != nil || len(rep.Written()) != 60 {
		t.Fatalf("%d cleared, %v; want 60", len(rep.Written()), err)
	}
	if r, tx, chk := c.reads.Load(), c.txs.Load(), c.checks.Load(); r != 0 || tx != 2 || chk != 2 {
		t.Errorf("%d reads, %d transactions, %d checks; want 0, 2, 2 (no policy, in each)", r, tx, chk)
	}
	left, err := ov.List(context.Background())
	if err != nil || len(left) != 0 {
		t.Errorf("%d overrides left, %v; want none", len(left), err)
	}
}

// twoEyesClear needs two approvals for every clear.
const twoEyesClear = `@id("two-eyes-clear")
@approvals("2")
permit (principal, action == Kosha::Action::"breaker.clear", resource)
when { context.approvals >= 2 };
`

// A policy set after clear --all's scan read none is not missed: the
// transaction checks there is still none, is refused, and the guard
// decides on the policy the refusal showed: two approvals, so the clear
// becomes a request and nothing is cleared.
func TestAPolicySetAfterClearAllsReadHoldsIt(t *testing.T) {
	c, log, clk := bare(t)
	ov := overridden(t, c, clk, log, 3)
	g := guardOn(c, clk, log, alice)
	ch, err := ov.ClearAll(context.Background(), "incident over", g.Reads()...)
	if err != nil {
		t.Fatal(err)
	}
	c.beforeTx = func() { setPolicy(t, c, log, twoEyesClear) }
	rep, err := lever.Do(context.Background(), g, ch, nil)
	var pe *lever.PendingError
	if !errors.As(err, &pe) || rep.Pending == nil || rep.Pending.Needed != 2 {
		t.Fatalf("%+v %v; want the clear pending its two approvals", rep, err)
	}
	if left, err := ov.List(context.Background()); err != nil || len(left) != 3 {
		t.Errorf("%d overrides left, %v; want all 3: a clear a policy set meanwhile holds was written", len(left), err)
	}
}

// secondSeesAPolicy serializes the transactions of the counted table c and
// sets a policy just before the second: the first lands, the second meets
// the policy.
type secondSeesAPolicy struct {
	*counting
	mu  sync.Mutex
	n   int
	set func()
}

func (s *secondSeesAPolicy) Transact(ctx context.Context, ch store.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n++; s.n == 2 {
		s.set()
	}
	return s.counting.Transact(ctx, ch)
}

// A clear --all of two transactions whose first landed before a policy
// came is not planned again (that would clear the first ones twice, or ask
// for them): what landed is reported written, the rest not written,
// naming the policy, and those overrides are still there.
func TestClearAllHalfLandedBeforeAPolicyReportsTheRest(t *testing.T) {
	c, log, clk := bare(t)
	ov := overridden(t, c, clk, log, 60)
	s := &secondSeesAPolicy{counting: c, set: func() { setPolicy(t, c, log, twoEyesClear) }}
	levers := leversOn(s, clk, breaker.DurationPolicy{}).WithLog(log)
	g := approval.NewService(s, clk, levers, "test").Guard(levers, func(context.Context) (audit.Identity, error) { return alice, nil }, "")
	ch, err := ov.ClearAll(context.Background(), "incident over", g.Reads()...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := lever.Do(context.Background(), g, ch, nil)
	if !errors.Is(err, lever.ErrNotWritten) || rep.Pending != nil || !strings.Contains(err.Error(), `"policy#table"`) {
		t.Fatalf("%v; want the rest not written, naming the policy", err)
	}
	written := len(rep.Written())
	left, lerr := ov.List(context.Background())
	if lerr != nil || written == 0 || written == 60 || len(left) != 60-written {
		t.Errorf("%d written, %d left (%v); want one transaction's written and the rest left", written, len(left), lerr)
	}
}
