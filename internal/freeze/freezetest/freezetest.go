// Package freezetest writes the fleet's freeze item in tests, with its
// audit record in one transaction, conditional on the item read, as the
// freeze lever does: the data plane's and chaos sign's tests need a freeze
// before the lever exists, and must not write one a way the lever never
// would. Tests only.
package freezetest

import (
	"context"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Store is what the helpers need of a store.
type Store interface {
	Get(ctx context.Context, pk string) (store.Item, error)
	Transact(ctx context.Context, c store.Change) error
}

// Audit actions of the records the helpers write (the lever's names may
// differ; the tests read the item, not these).
const (
	ActionSet  = "freeze.set"
	ActionLift = "freeze.lift"
)

// Set writes a freeze set at at by actor for reason and ref, lasting d (0:
// until lifted), replacing an ended one, and returns it as stored.
func Set(t testing.TB, st Store, log *audit.Log, actor, reason, ref string, at time.Time, d time.Duration) freeze.Freeze {
	t.Helper()
	f := freeze.Freeze{Actor: actor, Reason: reason, Ref: ref, SetAt: at.UTC().Truncate(time.Millisecond)}
	if d > 0 {
		f.ExpiresAt = f.SetAt.Add(d)
	}
	return write(t, st, log, ActionSet, actor, reason, func(*freeze.Freeze) freeze.Freeze { return f })
}

// Lift lifts the freeze at at (which must hold one) and returns it as
// stored.
func Lift(t testing.TB, st Store, log *audit.Log, actor, reason string, at time.Time) freeze.Freeze {
	t.Helper()
	return write(t, st, log, ActionLift, actor, reason, func(prev *freeze.Freeze) freeze.Freeze {
		if prev == nil {
			t.Fatal("freezetest.Lift: no freeze to lift")
		}
		f := *prev
		f.LiftedAt, f.LiftedBy, f.LiftReason = at.UTC().Truncate(time.Millisecond), actor, reason
		return f
	})
}

func write(t testing.TB, st Store, log *audit.Log, action, actor, reason string, next func(prev *freeze.Freeze) freeze.Freeze) freeze.Freeze {
	t.Helper()
	ctx := context.Background()
	prev, err := freeze.Read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	f := next(prev)
	cond := store.IfAbsent()
	f.Version = 1
	var before any
	if prev != nil {
		cond, f.Version, before = prev.Condition(), prev.NextVersion(), prev.Raw
	}
	token, err := store.NewWriteID()
	if err != nil {
		t.Fatal(err)
	}
	f.WriteID = token
	it := f.Item()
	_, op, err := log.Stage(ctx, audit.Entry{Actor: actor, Action: action, Subject: freeze.Key, Reason: reason, Before: before, After: it}, token, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Apply(ctx, st, store.Change{Token: token, Ops: []store.Op{store.PutOp(it, cond), op}, Proof: op.PK()}); err != nil {
		t.Fatalf("freezetest: write the freeze: %v", err)
	}
	got, err := freeze.Read(ctx, st)
	if err != nil || got == nil {
		t.Fatalf("freezetest: read back: %v", err)
	}
	return *got
}
