package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// batchCounting counts how the buckets were read.
type batchCounting struct {
	*sqlite.Store
	gets, batches atomic.Int64
}

func (c *batchCounting) Get(ctx context.Context, pk string) (store.Item, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, pk)
}

func (c *batchCounting) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	c.batches.Add(1)
	return c.Store.BatchGet(ctx, pks)
}

func TestApplyAllReadsOnceAndKeepsOrder(t *testing.T) {
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	s := &batchCounting{Store: raw}
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	b := newBuckets(t, s, clk)
	log := audit.NewLog(s, clk, "ctx")
	clients := []string{"c4", "c1", "full", "c2"}
	for _, c := range []string{"c4", "c1", "c2"} {
		apply(t, b, log, ratelimit.Change{Op: ratelimit.OpDrain, Client: c})
	}
	s.gets.Store(0)
	s.batches.Store(0)
	var changes []ratelimit.Change
	for _, c := range clients {
		changes = append(changes, ratelimit.Change{Op: ratelimit.OpReset, Client: c})
	}
	var confirmedWrites int
	outs, err := b.WithLog(log).ApplyAll(t.Context(), applyAll{Changes: changes, Reason: "incident over",
		Actor:   func(context.Context) (string, error) { return "al", nil },
		Confirm: func(_ []ratelimit.ChangeResult, writes int) error { confirmedWrites = writes; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if s.batches.Load() != 1 || s.gets.Load() != 0 || confirmedWrites != 3 {
		t.Errorf("%d batch reads, %d single reads, %d writes confirmed; want 1 batch, none single, 3", s.batches.Load(), s.gets.Load(), confirmedWrites)
	}
	var token string
	for i, o := range outs {
		if o.Result.Change.Client != clients[i] || o.Written != (clients[i] != "full") {
			t.Errorf("outcome %d: %+v", i, o)
		}
		if o.Written && (token == "" || o.Result.WriteID == token) && o.Record.Change == o.Result.WriteID && o.Result.Attempts == 1 {
			token = o.Result.WriteID
		} else if o.Written {
			t.Errorf("outcome %d: %+v; want the buckets written by one change, each with its record", i, o)
		}
	}
	// One change: the three buckets and their three records.
	if l, _ := log.List(t.Context(), audit.Query{Action: ratelimit.ActionReset}); len(l.Records) != 3 {
		t.Errorf("%d reset records, want 3", len(l.Records))
	}
	// Nothing to write needs no actor (a failing STS does not fail a no-op).
	outs, err = b.WithLog(log).ApplyAll(t.Context(), applyAll{Changes: changes[:1],
		Actor: func(context.Context) (string, error) { return "", errors.New("sts: expired") }})
	if err != nil || outs[0].Written {
		t.Errorf("a no-op with a failing actor: %+v, %v", outs, err)
	}
}

// countingStore counts the changes sent and fails those whose number is in
// fail (1-based) before they write anything.
type countingStore struct {
	*ratelimittest.MemStore
	mu    sync.Mutex
	sent  int
	sizes []int
	fail  map[int]bool
}

func (c *countingStore) Transact(ctx context.Context, ch store.Change) error {
	c.mu.Lock()
	c.sent++
	n := c.sent
	c.sizes = append(c.sizes, len(ch.Ops))
	c.mu.Unlock()
	if c.fail[n] {
		return fmt.Errorf("change %s: %w", ch.Token, ratelimittest.ErrOutage)
	}
	return c.MemStore.Transact(ctx, ch)
}

func drains(n int) []ratelimit.Change {
	cs := make([]ratelimit.Change, n)
	for i := range cs {
		cs[i] = ratelimit.Change{Op: ratelimit.OpDrain, Client: fmt.Sprintf("c%03d", i)}
	}
	return cs
}

// Past one change's limit, the buckets go in chunks of ChangeBuckets, one
// change each: every bucket written with its one record.
func TestApplyAllChunksPastOneChange(t *testing.T) {
	m := ratelimittest.NewMemStore()
	s := &countingStore{MemStore: m}
	clk := clocktest.NewFake(epoch)
	log := newLog(m, clk)
	n := 2*lever.ChunkLevers + 20
	_, err := newBuckets(t, s, clk).WithLog(log).ApplyAll(t.Context(), applyAll{Changes: drains(n), Reason: "flood",
		Actor: func(context.Context) (string, error) { return "al", nil }})
	if !errors.Is(err, exitcode.Kind(exitcode.Usage)) || s.sent != 0 {
		t.Fatalf("%d buckets not asked in chunks: %v, %d changes sent; want refused before anything is sent", n, err, s.sent)
	}
	outs, err := newBuckets(t, s, clk).WithLog(log).ApplyAll(t.Context(), applyAll{Changes: drains(n), Reason: "flood", Chunked: true,
		Actor: func(context.Context) (string, error) { return "al", nil }})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(s.sizes)
	if !slices.Equal(s.sizes, []int{40, store.MaxChangeOps, store.MaxChangeOps}) {
		t.Errorf("changes of %v ops, want two full ones and one of 40", s.sizes)
	}
	tokens := map[string]int{}
	for i, o := range outs {
		b := ratelimittest.Stored(t, m, o.Result.Change.Client)
		if !o.Written || o.Err != nil || b.Tokens != 0 || b.WriteID != o.Result.WriteID || o.Record.Change != b.WriteID {
			t.Fatalf("outcome %d: %+v, stored %+v", i, o, b)
		}
		tokens[b.WriteID]++
	}
	if len(tokens) != 3 {
		t.Errorf("buckets written by %d changes, want 3", len(tokens))
	}
	if recs := records(t, log, "rl#*"); len(recs) != n {
		t.Errorf("%d records, want %d", len(recs), n)
	}
}

// A store that fails some changes: each chunk has its own outcome, and
// exactly the changes that landed are recorded.
func TestApplyAllFailingStoreRecordsWhatLanded(t *testing.T) {
	m := ratelimittest.NewMemStore()
	s := &countingStore{MemStore: m, fail: map[int]bool{2: true}}
	clk := clocktest.NewFake(epoch)
	log := newLog(m, clk)
	n := 2*lever.ChunkLevers + 20
	outs, err := newBuckets(t, s, clk).WithLog(log).ApplyAll(t.Context(), applyAll{Changes: drains(n), Chunked: true,
		Actor: func(context.Context) (string, error) { return "al", nil }})
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("ApplyAll: %v, want the failed chunk's outage", err)
	}
	written, failed := 0, 0
	for i, o := range outs {
		it := m.Item(ratelimit.Key(o.Result.Change.Client))
		switch {
		case o.Written && o.Err == nil && len(it) > 0 && it.WriteID() == o.Result.WriteID:
			written++
		case !o.Written && errors.Is(o.Err, store.ErrUnavailable) && !o.Unknown && len(it) == 0 && o.Record.ID == "":
			failed++
		default:
			t.Fatalf("outcome %d: %+v, stored %v", i, o, it)
		}
	}
	if failed == 0 || written == 0 || written+failed != n {
		t.Errorf("%d written, %d failed, want one failed chunk and the others written", written, failed)
	}
	recs := records(t, log, "rl#*")
	if len(recs) != written {
		t.Fatalf("%d records, want exactly the %d changes that landed", len(recs), written)
	}
	for _, r := range recs {
		if it := m.Item(r.Subject); it.WriteID() != r.Change {
			t.Errorf("record %s of change %s, bucket %v", r.ID, r.Change, it)
		}
	}
}

// A chunk refused because a take landed on one of its buckets is re-read
// and rebuilt as a new change: every bucket lands once, recorded once.
func TestApplyAllRebuildsARefusedChunk(t *testing.T) {
	m := ratelimittest.NewMemStore()
	for _, c := range drains(3) {
		m.Set(ratelimit.Bucket{Client: c.Client, Tokens: 10, UpdatedAtMs: t0}.Item())
	}
	s := &busyStore{MemStore: m, n: 1}
	clk := clocktest.NewFake(epoch)
	log := newLog(m, clk)
	outs, err := newBuckets(t, s, clk).WithLog(log).ApplyAll(t.Context(), applyAll{Changes: drains(3),
		Actor: func(context.Context) (string, error) { return "al", nil }})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if !o.Written || o.Result.Attempts != 2 || o.Result.Before.Stored.Tokens != 9 || o.Record.Change != o.Result.WriteID {
			t.Errorf("outcome %d: %+v", i, o)
		}
	}
	recs := records(t, log, "rl#*")
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if r.Change != outs[0].Result.WriteID {
			t.Errorf("record %+v is not of the change that landed (%s)", r, outs[0].Result.WriteID)
		}
	}
}
