package breaker_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
)

var t0 = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

func openStore(t *testing.T) store.Store {
	t.Helper()
	return sqlitetest.NewStore(t)
}

func TestOverrideActiveRule(t *testing.T) {
	t.Parallel()
	exp := t0.Add(time.Minute)
	cases := []struct {
		name string
		o    breaker.Override
		at   time.Time
		want bool
	}{
		{"no expiry", breaker.Override{State: "forced_open"}, t0.Add(1000 * time.Hour), true},
		{"before expiry", breaker.Override{State: "forced_open", ExpiresAt: exp}, exp.Add(-time.Millisecond), true},
		{"exactly at expiry", breaker.Override{State: "forced_open", ExpiresAt: exp}, exp, false},
		{"after expiry", breaker.Override{State: "forced_open", ExpiresAt: exp}, exp.Add(time.Hour), false},
		{"other state", breaker.Override{State: "closed"}, t0, false},
	}
	for _, tc := range cases {
		if got := tc.o.ActiveAt(tc.at); got != tc.want {
			t.Errorf("%s: ActiveAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOverrideItemRoundTripFollowsContract(t *testing.T) {
	t.Parallel()
	o := breaker.Override{Dependency: "openai", State: "forced_open", Reason: "r", Actor: "a",
		CreatedAt: t0, ExpiresAt: t0.Add(30*time.Minute + 500*time.Millisecond), Version: 3}
	it := o.Item()
	if it.PK() != "breaker#openai" {
		t.Errorf("pk = %q", it.PK())
	}
	if ttl, _ := it.Int("ttl"); ttl != t0.Add(30*time.Minute).Unix()+1 {
		t.Errorf("ttl = %d: must round up so GC never precedes expiry", ttl)
	}
	back, err := breaker.OverrideFromItem(it)
	if back.Malformed() {
		t.Errorf("an item koshactl writes is malformed: %v", back.Problems)
	}
	back.Raw = nil
	if err != nil || !reflect.DeepEqual(back, o) {
		t.Errorf("round trip = %+v, %v; want %+v", back, err, o)
	}
	noExp := breaker.Override{Dependency: "x", State: "forced_open", CreatedAt: t0, Version: 1}.Item()
	if _, ok := noExp["ttl"]; ok {
		t.Error("an override without expiry must not carry ttl")
	}
	if _, ok := noExp["expires_at"]; ok {
		t.Error("an override without expiry must not carry expires_at")
	}
}

func TestForcedOpenReadsTheRule(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(s, clk)
	ctx := context.Background()
	if f, err := ov.ForcedOpen(ctx, "openai"); f.Active || err != nil {
		t.Fatalf("absent item: %v %v", f, err)
	}
	if _, err := ov.Force(ctx, forceReq{Dependency: "openai", Reason: "r", Actor: "a", ExpiresAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if f, _ := ov.ForcedOpen(ctx, "openai"); !f.Active || !f.ExpiresAt.Equal(t0.Add(time.Minute)) || f.Reason != "r" {
		t.Errorf("fresh override: %+v", f)
	}
	clk.Advance(time.Minute)
	if f, _ := ov.ForcedOpen(ctx, "openai"); f.Active {
		t.Error("expired override still active (the item still exists: expiry must be checked on read)")
	}
}

// Two operators force the same dependency at once: exactly one wins, the
// other gets a conflict naming the winner; nothing is silently overwritten.
func TestConcurrentForceExactlyOneWins(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ov := newLevers(s, clocktest.NewFake(t0))
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = ov.Force(context.Background(), forceReq{Dependency: "openai", Reason: "r",
				Actor: "operator-" + strconv.Itoa(i), ExpiresAt: t0.Add(time.Hour)})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		var ce *breaker.ConflictError
		switch {
		case err == nil:
			wins++
		case errors.As(err, &ce):
			if ce.Current.Actor == "" {
				t.Errorf("conflict does not name the holder: %v", err)
			}
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d forces won, want exactly 1", wins)
	}
}

// A clear that read version 1 must not delete a version 2 written meanwhile.
func TestClearDoesNotDeleteAReForce(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	ov := newLevers(s, clocktest.NewFake(t0))
	if _, err := ov.Force(ctx, forceReq{Dependency: "openai", Reason: "v1", Actor: "a", ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	racy := &interleave{Store: s, beforeDelete: func() {
		if _, err := ov.Force(ctx, forceReq{Dependency: "openai", Reason: "v2", Actor: "b",
			ExpiresAt: t0.Add(time.Hour), Overwrite: true}); err != nil {
			t.Fatal(err)
		}
	}}
	_, err := newLevers(racy, clocktest.NewFake(t0)).Clear(ctx, "openai")
	var ce *breaker.ConflictError
	if !errors.As(err, &ce) || !ce.Raced || ce.Current.Reason != "v2" {
		t.Fatalf("clear racing a re-force: err = %v", err)
	}
	if o, err := ov.Get(ctx, "openai"); err != nil || o.Reason != "v2" {
		t.Errorf("the re-forced override was lost: %+v %v", o, err)
	}
}

// interleave runs a hook between a command's read and its write.
type interleave struct {
	store.Store
	beforeDelete func()
}

func (i *interleave) Transact(ctx context.Context, c store.Change) error {
	if i.beforeDelete != nil {
		i.beforeDelete()
		i.beforeDelete = nil
	}
	return i.Store.Transact(ctx, c)
}

// A force planned on one read must not overwrite an override written after
// that read: the conditional write turns it into a conflict.
func TestForceOnStaleReadIsAConflict(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	ov := newLevers(s, clocktest.NewFake(t0))
	c := forceReq{Dependency: "openai", Reason: "mine", Actor: "a", For: time.Hour}.change()
	c.DryRun = true
	plan, err := ov.Change(ctx, c)
	if err != nil || breaker.ForceResultOf(plan.Outcomes[0]).Before != nil {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	if _, err := ov.Force(ctx, forceReq{Dependency: "openai", Reason: "theirs", Actor: "b", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c.DryRun, c.Read = false, map[string]store.Item{"openai": nil}
	_, err = ov.Change(ctx, c)
	var ce *breaker.ConflictError
	if !errors.As(err, &ce) || !ce.Raced || ce.Current.Actor != "b" {
		t.Fatalf("force on a stale read: %v", err)
	}
	if o, _ := ov.Get(ctx, "openai"); o.Reason != "theirs" {
		t.Errorf("the other operator's override was overwritten: %+v", o)
	}
}
