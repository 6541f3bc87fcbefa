package ratelimit_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
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
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	b := newBuckets(t, s, clk)
	log := audit.NewLog(s, clk, "ctx")
	clients := []string{"c4", "c1", "full", "c2"}
	for _, c := range []string{"c4", "c1", "c2"} {
		if _, err := b.Apply(t.Context(), ratelimit.Change{Op: ratelimit.OpDrain, Client: c}); err != nil {
			t.Fatal(err)
		}
	}
	s.gets.Store(0)
	var changes []ratelimit.Change
	for _, c := range clients {
		changes = append(changes, ratelimit.Change{Op: ratelimit.OpReset, Client: c})
	}
	var confirmedWrites int
	outs, err := b.ApplyAll(t.Context(), log, ratelimit.ApplyAll{Changes: changes, Reason: "incident over",
		Actor:   func(context.Context) (string, error) { return "al", nil },
		Confirm: func(_ []ratelimit.ChangeResult, writes int) error { confirmedWrites = writes; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if s.batches.Load() != 1 || s.gets.Load() != 0 || confirmedWrites != 3 {
		t.Errorf("%d batch reads, %d single reads, %d writes confirmed; want 1 batch, none single, 3", s.batches.Load(), s.gets.Load(), confirmedWrites)
	}
	for i, o := range outs {
		if o.Result.Change.Client != clients[i] || o.Written != (clients[i] != "full") {
			t.Errorf("outcome %d: %+v", i, o)
		}
	}
	if l, _ := log.List(t.Context(), audit.Query{Action: ratelimit.ActionReset}); len(l.Records) != 3 {
		t.Errorf("%d reset records, want 3", len(l.Records))
	}
	// Nothing to write needs no actor (a failing STS does not fail a no-op).
	outs, err = b.ApplyAll(t.Context(), log, ratelimit.ApplyAll{Changes: changes[:1],
		Actor: func(context.Context) (string, error) { return "", errors.New("sts: expired") }})
	if err != nil || outs[0].Written {
		t.Errorf("a no-op with a failing actor: %+v, %v", outs, err)
	}
}
