package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
	"github.com/kosha-platform/koshactl/internal/store"
)

// countingStore counts the store's round trips (a batch read is one) and
// can be made to fail.
type countingStore struct {
	*memstore.Store
	gets, batches atomic.Int64
	fail          atomic.Bool
}

func (s *countingStore) Get(ctx context.Context, pk string) (store.Item, error) {
	s.gets.Add(1)
	if s.fail.Load() {
		return nil, store.ErrUnavailable
	}
	return s.Store.Get(ctx, pk)
}

// BatchGet makes the store a store.BatchGetter: one round trip for many
// keys, as DynamoDB's BatchGetItem.
func (s *countingStore) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	s.batches.Add(1)
	if s.fail.Load() {
		return nil, store.ErrUnavailable
	}
	out := map[string]store.Item{}
	for _, pk := range pks {
		it, err := s.Store.Get(ctx, pk)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[pk] = it
	}
	return out, nil
}

var _ store.BatchGetter = (*countingStore)(nil)

// On an injected clock: the freeze rides on the override's read (one batch
// read, no round trip of its own), reaches the instance within one cache
// period, and the gate reads it on its own only when no override read has
// for two periods; a store that stops answering makes the instance refuse
// every header once its reading is older than freeze.MaxReadAge.
func TestControlReaderOnAClock(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	st := &countingStore{Store: memstore.New()}
	log := audit.NewLog(st, clk, "test")
	const refresh = 5 * time.Second
	var changes []bool
	cr := newControlReader(st, clk, slog.New(slog.DiscardHandler), refresh, "gw-1", func(_ string, frozen bool, _ time.Time) {
		changes = append(changes, frozen)
	})
	b, err := circuit.New(circuit.Settings{Name: CoreAPI, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w := circuit.NewForceWatcher(b, cr, circuit.WatcherSettings{RefreshInterval: refresh, Clock: clk})
	ctx := context.Background()

	if !cr.refusesAll(t0) {
		t.Fatal("an instance that never read the freeze honours chaos headers")
	}
	w.Sync(ctx)
	if st.batches.Load() != 1 || st.gets.Load() != 0 {
		t.Fatalf("the first sync made %d batch reads and %d gets, want the override and the freeze in one batch read", st.batches.Load(), st.gets.Load())
	}
	if cr.refusesAll(t0) || cr.current(ctx).Freeze != nil || st.gets.Load() != 0 {
		t.Fatal("no freeze item: the instance should honour headers, without reading the freeze again")
	}

	set := freezetest.Set(t, st.Store, log, "alice@laptop", "incident", "INC-9", t0, 0)
	clk.Advance(refresh - time.Nanosecond)
	w.Sync(ctx)
	if cr.refusesAll(clk.Now()) {
		t.Fatal("the freeze reached the instance before its cache period ended")
	}
	clk.Advance(time.Nanosecond)
	w.Sync(ctx)
	if !cr.refusesAll(clk.Now()) {
		t.Fatal("the freeze did not reach the instance within one cache period")
	}
	if st.batches.Load() != 2 || st.gets.Load() != 0 {
		t.Errorf("%d batch reads and %d gets over one cache period, want 2 and 0", st.batches.Load(), st.gets.Load())
	}
	h := chaos.Header{Fields: chaos.Fields{IAT: t0.Add(-time.Minute).Unix(), Exp: t0.Add(4 * time.Minute).Unix()}}
	var fr *chaos.FreezeRefusal
	if err := chaos.CheckFreezeRule(&h, cr.current(ctx), clk.Now()); !errors.As(err, &fr) || !fr.Frozen || fr.Freeze.WriteID != set.WriteID {
		t.Errorf("while frozen: %v", err)
	}

	// No override read for two periods (an idle instance): the gate reads
	// the freeze itself, once per period.
	clk.Advance(2 * refresh)
	freezetest.Lift(t, st.Store, log, "bob@laptop", "not us", clk.Now())
	clk.Advance(time.Second)
	if r := cr.current(ctx); r.Freeze == nil || !r.Freeze.Lifted() || st.gets.Load() != 1 {
		t.Fatalf("idle instance: reading %+v after %d gets, want the lift read once", r.Freeze, st.gets.Load())
	}
	cr.current(ctx)
	if st.gets.Load() != 1 {
		t.Errorf("a second call within the period read again (%d gets)", st.gets.Load())
	}
	if err := chaos.CheckFreezeRule(&h, cr.current(ctx), clk.Now()); !errors.As(err, &fr) || fr.Frozen {
		t.Errorf("a header minted before the freeze, after the lift: %v, want void", err)
	}
	if len(changes) != 3 || changes[0] || !changes[1] || changes[2] {
		t.Errorf("chaos_frozen changes %v, want false (first read), true, false", changes)
	}

	// The store stops answering: the last reading holds for MaxReadAge, then
	// every header is refused.
	st.fail.Store(true)
	readAt := cr.snapshot().ReadAt
	clk.Set(readAt.Add(freeze.MaxReadAge))
	w.Sync(ctx)
	if cr.refusesAll(clk.Now()) {
		t.Error("a reading MaxReadAge old was not honoured")
	}
	clk.Advance(time.Millisecond)
	w.Sync(ctx)
	if !cr.refusesAll(clk.Now()) {
		t.Error("a reading older than MaxReadAge, the store failing, still honours headers")
	}
	late := chaos.Header{Fields: chaos.Fields{IAT: clk.Now().Unix(), Exp: clk.Now().Add(time.Minute).Unix()}}
	if err := chaos.CheckFreezeRule(&late, cr.current(ctx), clk.Now()); !errors.As(err, &fr) || !fr.Frozen {
		t.Errorf("with no recent reading: %v, want every header refused", err)
	}
}

// Two reads crossing: the answer of the older read never replaces the
// newer one's.
func TestControlReaderKeepsTheNewestRead(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	cr := newControlReader(memstore.New(), clk, slog.New(slog.DiscardHandler), time.Second, "gw-1", nil)
	frozen := freeze.Freeze{Actor: "a", Reason: "r", SetAt: t0, Version: 1}
	cr.observe(nil, t0.Add(time.Second))
	cr.observe(frozen.Item(), t0)
	if cr.refusesAll(t0.Add(time.Second)) {
		t.Error("an older read's answer replaced the newer one")
	}
}
