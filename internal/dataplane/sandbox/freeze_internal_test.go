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
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
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

// On an injected clock: the freeze rides on the overrides' reads (one batch
// read each, no round trip of its own), reaches the instance within one
// cache period, and a chaos header on an instance idle for longer is
// decided after the read its call would make anyway; a store that stops
// answering makes the instance refuse every header once its reading is
// older than freeze.MaxReadAge.
func TestFreezeReadingOnAClock(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(t0)
	st := &countingStore{Store: memstore.New()}
	log := audit.NewLog(st.Store, clk, "test")
	const refresh = 5 * time.Second
	var changes []bool
	discard := slog.New(slog.DiscardHandler)
	cr := newControlReader(st, clk, discard, refresh, "gw-1", func(_ string, frozen bool, _ time.Time) {
		changes = append(changes, frozen)
	})
	in, err := newInstance("gw-1", DefaultConfig(), resilience.Options{Clock: clk, Logger: discard, Force: cr})
	if err != nil {
		t.Fatal(err)
	}
	in.control = cr
	ctx := context.Background()
	n := int64(len(in.watchers))
	if n == 0 {
		t.Fatal("the instance watches no override")
	}

	if !in.ChaosFrozen(t0) {
		t.Fatal("an instance that never read the freeze honours chaos headers")
	}
	in.SyncOverrides(ctx)
	if st.batches.Load() != n || st.gets.Load() != 0 {
		t.Fatalf("the first sync made %d batch reads and %d gets, want %d batch reads (each override with the freeze) and no get",
			st.batches.Load(), st.gets.Load(), n)
	}
	if in.ChaosFrozen(t0) || in.freezeReading(ctx, CoreAPI, t0).Freeze != nil || st.batches.Load() != n {
		t.Fatal("no freeze item: the instance should honour headers, without reading again")
	}

	set := freezetest.Set(t, st.Store, log, "alice@laptop", "incident", "INC-9", t0, 0)
	clk.Advance(refresh - time.Nanosecond)
	in.SyncOverrides(ctx)
	if in.ChaosFrozen(clk.Now()) {
		t.Fatal("the freeze reached the instance before its cache period ended")
	}
	clk.Advance(time.Nanosecond)
	in.SyncOverrides(ctx)
	if !in.ChaosFrozen(clk.Now()) {
		t.Fatal("the freeze did not reach the instance within one cache period")
	}
	if st.batches.Load() != 2*n || st.gets.Load() != 0 {
		t.Errorf("%d batch reads and %d gets over one cache period, want %d and 0", st.batches.Load(), st.gets.Load(), 2*n)
	}
	h := chaos.Header{Fields: chaos.Fields{IAT: t0.Add(-time.Minute).Unix(), Exp: t0.Add(4 * time.Minute).Unix()}}
	var fr *chaos.FreezeRefusal
	if err := chaos.CheckFreezeRule(&h, in.freezeReading(ctx, CoreAPI, clk.Now()), clk.Now()); !errors.As(err, &fr) || !fr.Frozen || fr.Freeze.WriteID != set.WriteID {
		t.Errorf("while frozen: %v", err)
	}

	// Idle for two periods: a header is decided after one sync of its
	// target's override, the freeze in the same batch.
	clk.Advance(2 * refresh)
	freezetest.Lift(t, st.Store, log, "bob@laptop", "not us", clk.Now())
	clk.Advance(time.Second)
	if r := in.freezeReading(ctx, ScreeningSim, clk.Now()); r.Freeze == nil || !r.Freeze.Lifted() || st.batches.Load() != 2*n+1 || st.gets.Load() != 0 {
		t.Fatalf("idle instance: reading %+v after %d batch reads and %d gets, want the lift read in one batch read", r.Freeze, st.batches.Load(), st.gets.Load())
	}
	in.freezeReading(ctx, ScreeningSim, clk.Now())
	if st.batches.Load() != 2*n+1 {
		t.Errorf("a second header within the period read again (%d batch reads)", st.batches.Load())
	}
	if err := chaos.CheckFreezeRule(&h, in.freezeReading(ctx, ScreeningSim, clk.Now()), clk.Now()); !errors.As(err, &fr) || fr.Frozen {
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
	in.SyncOverrides(ctx)
	if in.ChaosFrozen(clk.Now()) {
		t.Error("a reading MaxReadAge old was not honoured")
	}
	clk.Advance(time.Millisecond)
	in.SyncOverrides(ctx)
	if !in.ChaosFrozen(clk.Now()) {
		t.Error("a reading older than MaxReadAge, the store failing, still honours headers")
	}
	late := chaos.Header{Fields: chaos.Fields{IAT: clk.Now().Unix(), Exp: clk.Now().Add(time.Minute).Unix()}}
	if err := chaos.CheckFreezeRule(&late, in.freezeReading(ctx, CoreAPI, clk.Now()), clk.Now()); !errors.As(err, &fr) || !fr.Frozen {
		t.Errorf("with no recent reading: %v, want every header refused", err)
	}
}

// Two reads crossing: the answer of the older read never replaces the
// newer one's.
func TestControlReaderKeepsTheNewestRead(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(t0)
	cr := newControlReader(memstore.New(), clk, slog.New(slog.DiscardHandler), time.Second, "gw-1", nil)
	frozen := freeze.Freeze{Actor: "a", Reason: "r", SetAt: t0, Version: 1}
	cr.observe(nil, t0.Add(time.Second))
	cr.observe(frozen.Item(), t0)
	if cr.refusesAll(t0.Add(time.Second)) {
		t.Error("an older read's answer replaced the newer one")
	}
}
