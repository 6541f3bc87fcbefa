package freeze_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
)

// racing is a store whose next transaction is preceded by another
// operator's freeze (between koshactl's read and its write).
type racing struct {
	store.Store
	log   *audit.Log
	t     *testing.T
	clk   clock.Clock
	armed bool
}

func (r *racing) Transact(ctx context.Context, c store.Change) error {
	if r.armed {
		r.armed = false
		freezetest.Set(r.t, r.Store, r.log, "bob@laptop", "bob's incident", "INC-2", r.clk.Now(), 3*time.Hour)
	}
	return r.Store.Transact(ctx, c)
}

type fixture struct {
	svc *lever.Service
	st  *racing
	log *audit.Log
	clk *clocktest.Fake
}

func newFixture(t *testing.T, maxFor time.Duration) fixture {
	t.Helper()
	base := sqlitetest.NewStore(t)
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	log := audit.NewLog(base, clk, "test")
	st := &racing{Store: base, log: log, t: t, clk: clk}
	reg := lever.NewRegistry(lever.Entry{Spec: freeze.Spec, New: func() (lever.Kind, error) { return freeze.NewLever(clk, maxFor), nil }})
	svc := lever.NewService(st, clk, reg).WithLog(log).WithActor(func(context.Context) (string, error) { return "alice@laptop", nil })
	return fixture{svc: svc, st: st, log: log, clk: clk}
}

func (fx fixture) read(t *testing.T) *freeze.Freeze {
	t.Helper()
	f, err := freeze.Read(context.Background(), fx.st)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (fx fixture) records(t *testing.T, action string) []audit.Record {
	t.Helper()
	l, err := fx.log.List(context.Background(), audit.Query{Action: action})
	if err != nil {
		t.Fatal(err)
	}
	return l.Records
}

// A freeze is one lever change: the item (holding for the default hour),
// its audit record sharing its write_id, and an announcement naming the
// incident; lifting writes its end, never deletes it; lifting again finds
// nothing frozen and writes nothing.
func TestFreezeIsSetAndLiftedAsOneLever(t *testing.T) {
	fx := newFixture(t, 24*time.Hour)
	ctx := context.Background()
	now := fx.clk.Now()
	rep, err := fx.svc.Change(ctx, freeze.Set("real incident", freeze.SetParams{Ref: "INC-1"}))
	if err != nil {
		t.Fatal(err)
	}
	f := fx.read(t)
	if f == nil || !f.FrozenAt(now) || f.Actor != "alice@laptop" || f.Ref != "INC-1" || f.Version != 1 || !f.ExpiresAt.Equal(now.Add(freeze.DefaultFor)) {
		t.Fatalf("freeze %+v: want alice's for INC-1, version 1, until an hour from now", f)
	}
	recs := fx.records(t, freeze.ActionSet)
	if len(recs) != 1 || recs[0].Change != f.WriteID || recs[0].Subject != freeze.Key {
		t.Fatalf("records %+v: want one freeze.set on %s sharing the item's write_id %s", recs, freeze.Key, f.WriteID)
	}
	if ev := rep.Event; ev == nil || ev.Action != freeze.ActionSet || len(ev.Levers) != 1 || ev.Levers[0].Change != "frozen until 2026-11-29T20:00:00Z (INC-1)" {
		t.Errorf("announcement %+v", rep.Event)
	}

	fx.clk.Advance(10 * time.Minute)
	if _, err := fx.svc.Change(ctx, freeze.Lift("not us")); err != nil {
		t.Fatal(err)
	}
	f = fx.read(t)
	if f == nil || f.FrozenAt(fx.clk.Now()) || !f.Lifted() || f.LiftedBy != "alice@laptop" || f.Version != 2 {
		t.Fatalf("after the lift: %+v: want the item kept, lifted by alice, version 2", f)
	}
	rep, err = fx.svc.Change(ctx, freeze.Lift("again"))
	if err != nil || len(rep.Outcomes) != 1 || !rep.Outcomes[0].Noop || !freeze.ResultOf(rep.Outcomes[0]).NotFrozen || rep.Event != nil {
		t.Fatalf("second lift: %+v %v: want nothing frozen, nothing written or announced", rep, err)
	}
	if n := len(fx.records(t, freeze.ActionLift)); n != 1 {
		t.Errorf("%d lift records, want 1", n)
	}
}

// Two operators freezing: the later one extends the freeze it finds (its
// actor, reason and reference; the later of the two ends), never shortens
// it: ending one early is a lift, which the table's policy may hold. Both
// are recorded.
func TestASecondFreezeExtendsAndNeverShortens(t *testing.T) {
	fx := newFixture(t, 24*time.Hour)
	ctx := context.Background()
	start := fx.clk.Now()
	if _, err := fx.svc.Change(ctx, freeze.Set("first", freeze.SetParams{For: 2 * time.Hour, Ref: "INC-1"})); err != nil {
		t.Fatal(err)
	}
	fx.clk.Advance(time.Minute)
	rep, err := fx.svc.Change(ctx, freeze.Set("second", freeze.SetParams{For: 10 * time.Minute, Ref: "INC-2"}))
	if err != nil {
		t.Fatal(err)
	}
	r := freeze.ResultOf(rep.Outcomes[0])
	f := fx.read(t)
	if !r.Extended || !r.KeptEnd || !f.ExpiresAt.Equal(start.Add(2*time.Hour)) || f.Ref != "INC-2" || f.Version != 2 {
		t.Fatalf("freeze %+v (result %+v): want INC-2's, keeping the first freeze's later end, version 2", f, r)
	}
	if _, err := fx.svc.Change(ctx, freeze.Set("third", freeze.SetParams{For: 5 * time.Hour})); err != nil {
		t.Fatal(err)
	}
	if f := fx.read(t); !f.ExpiresAt.Equal(fx.clk.Now().Add(5 * time.Hour)) {
		t.Errorf("a longer freeze ends %s, want %s", f.ExpiresAt, fx.clk.Now().Add(5*time.Hour))
	}
	if n := len(fx.records(t, freeze.ActionSet)); n != 3 {
		t.Errorf("%d freeze.set records, want 3", n)
	}
}

// A freeze written by someone else between koshactl's read and its write
// refuses the write; the set is read and decided again, extending theirs:
// one item, both recorded.
func TestConcurrentFreezesBothLand(t *testing.T) {
	fx := newFixture(t, 24*time.Hour)
	fx.st.armed = true
	rep, err := fx.svc.Change(context.Background(), freeze.Set("mine", freeze.SetParams{For: 30 * time.Minute, Ref: "INC-1"}))
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Outcomes[0]
	f := fx.read(t)
	if o.Attempts != 2 || f.Actor != "alice@laptop" || f.Version != 2 || !f.ExpiresAt.Equal(fx.clk.Now().Add(3*time.Hour)) || !freeze.ResultOf(o).Extended {
		t.Fatalf("freeze %+v after %d attempts: want alice's extending bob's 3h freeze, version 2", f, o.Attempts)
	}
	if n := len(fx.records(t, freeze.ActionSet)); n != 2 {
		t.Errorf("%d freeze.set records, want bob's and alice's", n)
	}
}

// Bad input is refused before anything is read, with a usage error
// naming the fix.
func TestFreezeBadInputIsAUsageError(t *testing.T) {
	fx := newFixture(t, 2*time.Hour)
	for _, tc := range []struct {
		name string
		c    lever.Change
	}{
		{"no reason", freeze.Set(" ", freeze.SetParams{})},
		{"longer than max-override", freeze.Set("x", freeze.SetParams{For: 3 * time.Hour})},
		{"until past max-override", freeze.Set("x", freeze.SetParams{Until: fx.clk.Now().Add(5 * time.Hour)})},
		{"shorter than the cache", freeze.Set("x", freeze.SetParams{For: time.Second})},
		{"a bad reference", freeze.Set("x", freeze.SetParams{Ref: "INC 1"})},
		{"a lift without reason", freeze.Lift("")},
	} {
		_, err := fx.svc.Change(context.Background(), tc.c)
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: %v (exit %d), want a usage error", tc.name, err, exitcode.Of(err))
		}
	}
	if f := fx.read(t); f != nil {
		t.Errorf("something was written: %+v", f)
	}
	_, err := fx.svc.Change(context.Background(), freeze.Set("x", freeze.SetParams{For: 3 * time.Hour}))
	if !errors.Is(err, freeze.ErrBadDuration) {
		t.Errorf("%v: want ErrBadDuration", err)
	}
}

// The default is an hour, or the context's max-override when shorter.
func TestDefaultFreezeFitsTheMaxOverride(t *testing.T) {
	fx := newFixture(t, 20*time.Minute)
	if _, err := fx.svc.Change(context.Background(), freeze.Set("x", freeze.SetParams{})); err != nil {
		t.Fatal(err)
	}
	if f := fx.read(t); !f.ExpiresAt.Equal(fx.clk.Now().Add(20 * time.Minute)) {
		t.Errorf("ends %s, want the 20m max-override", f.ExpiresAt)
	}
}

// A registry that names no max-override (builtin.Settings' zero value, as
// drills and tests build it) gets the context's default bound, as the
// breaker kind does: a freeze with no end holds for the default hour, not
// for nothing, and one past the default bound is refused.
func TestNoMaxOverrideIsTheContextsDefault(t *testing.T) {
	if freeze.DefaultMaxFor != config.DefaultMaxOverride {
		t.Errorf("the freeze's default max %s, the context's %s", freeze.DefaultMaxFor, config.DefaultMaxOverride)
	}
	fx := newFixture(t, 0)
	if _, err := fx.svc.Change(context.Background(), freeze.Set("x", freeze.SetParams{})); err != nil {
		t.Fatal(err)
	}
	if f := fx.read(t); !f.ExpiresAt.Equal(fx.clk.Now().Add(freeze.DefaultFor)) {
		t.Errorf("ends %s, want %s later (the default hour)", f.ExpiresAt, freeze.DefaultFor)
	}
	_, err := fx.svc.Change(context.Background(), freeze.Set("x", freeze.SetParams{For: config.DefaultMaxOverride + time.Hour}))
	if !errors.Is(err, freeze.ErrBadDuration) {
		t.Errorf("a freeze past the default max-override: %v, want %v", err, freeze.ErrBadDuration)
	}
}
