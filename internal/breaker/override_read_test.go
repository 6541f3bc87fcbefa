package breaker_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

var endpoint string

func TestMain(m *testing.M) { moto.RunMain(m, &endpoint) }

// counted records how a store was read.
type counted struct {
	store.Store
	scans, batchKeys atomic.Int64
}

func (c *counted) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	c.scans.Add(1)
	return c.Store.Scan(ctx, q)
}

func (c *counted) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	c.batchKeys.Add(int64(len(pks)))
	return c.Store.(store.BatchGetter).BatchGet(ctx, pks)
}

func (c *counted) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	return c.Store.(store.Querier).Query(ctx, q)
}

func deps(list []breaker.Override) string {
	var out []string
	for _, o := range list {
		out = append(out, o.Dependency)
	}
	return strings.Join(out, ",")
}

func TestListForReadsByKey(t *testing.T) {
	t.Parallel()
	for name, base := range map[string]store.Store{"sqlite": openStore(t), "dynamo": dynamotest.NewStore(t, endpoint)} {
		t.Run(name, func(t *testing.T) {
			s := &counted{Store: base}
			ov := newLevers(s, clock.NewFake(t0))
			// A table mostly of buckets, with overrides of a known and an
			// unknown dependency.
			for i := range 300 {
				if err := base.Put(t.Context(), store.Item{store.PK: fmt.Sprintf("rl#c%03d", i), "tokens": int64(1)}, store.Always()); err != nil {
					t.Fatal(err)
				}
			}
			for _, dep := range []string{"openai", "legacy-tool"} {
				if _, err := ov.Force(t.Context(), forceReq{Dependency: dep, Reason: "r", Actor: "a", For: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			s.batchKeys.Store(0) // the forces' own reads
			list, err := ov.ListFor(t.Context(), []string{"openai", "core-api"})
			if err != nil {
				t.Fatal(err)
			}
			if deps(list) != "legacy-tool,openai" {
				t.Errorf("ListFor = %s, want legacy-tool,openai", deps(list))
			}
			if s.scans.Load() != 0 {
				t.Errorf("ListFor scanned the table %d times", s.scans.Load())
			}
			// Two known keys plus the index's two (one repeated).
			if k := s.batchKeys.Load(); k != 4 {
				t.Errorf("ListFor batch-read %d keys, want 4", k)
			}
			// A clear shows at once: the index's stale key reads as absent.
			if _, err := ov.Clear(t.Context(), "legacy-tool"); err != nil {
				t.Fatal(err)
			}
			if list, err := ov.ListFor(t.Context(), []string{"openai"}); err != nil || deps(list) != "openai" {
				t.Errorf("ListFor after clear = %s, %v", deps(list), err)
			}
		})
	}
}

func TestListForFallsBackOnLegacyTable(t *testing.T) {
	t.Parallel()
	base := dynamotest.NewLegacyStore(t, endpoint)
	s := &counted{Store: base}
	ov := newLevers(s, clock.NewFake(t0))
	var notices []string
	ov.SetNotice(func(m string) { notices = append(notices, m) })
	if _, err := ov.Force(t.Context(), forceReq{Dependency: "openai", Reason: "r", Actor: "a", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		list, err := ov.ListFor(t.Context(), []string{"openai"})
		if err != nil || deps(list) != "openai" {
			t.Fatalf("ListFor on a legacy table = %s, %v", deps(list), err)
		}
	}
	if s.scans.Load() != 2 || len(notices) != 1 || !strings.Contains(notices[0], "store migrate") {
		t.Errorf("scans %d, notices %q; want a scan per list and one notice naming `store migrate`", s.scans.Load(), notices)
	}
}

func TestOverrideBackfill(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	old := store.Item{store.PK: "breaker#other-tool", "state": "forced_open", "reason": "r", "actor": "a",
		"created_at": t0.UnixMilli(), "version": int64(3)}
	if err := s.Put(t.Context(), old, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	long := old.Clone()
	long[store.PK] = "breaker#" + strings.Repeat("x", store.MaxIndexedPKBytes)
	if err := s.Put(t.Context(), long, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	ov := newLevers(s, clock.NewFake(t0))
	if list, _ := ov.ListFor(t.Context(), nil); len(list) != 0 {
		t.Fatalf("an item without the index attribute was listed by index: %s", deps(list))
	}
	if rep, err := ov.Backfill(t.Context(), true); err != nil || rep.Updated != 1 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if rep, err := ov.Backfill(t.Context(), false); err != nil || rep.Updated != 1 || rep.Examined != 2 || len(rep.Unindexed) != 1 || rep.Unindexed[0].PK != long.PK() || !strings.Contains(rep.Unindexed[0].Why, "sort key") {
		t.Fatalf("backfill: %+v, %v", rep, err)
	}
	if list, _ := ov.ListFor(t.Context(), nil); deps(list) != "other-tool" || list[0].Version != 3 {
		t.Errorf("after the backfill: %+v", list)
	}
}
