package approval_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// bare is a table without a policy, counted.
func bare(t *testing.T) (*counting, *audit.Log, *clock.Fake) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
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
