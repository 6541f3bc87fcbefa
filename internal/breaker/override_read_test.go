package breaker_test

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

var endpoint string

func TestMain(m *testing.M) { moto.RunMain(m, &endpoint) }

// counted records how a store was read: scans, keys asked of batch reads,
// and the items every read returned (Get, BatchGet, Query).
type counted struct {
	store.Store
	scans, batchKeys, gets, returned atomic.Int64
}

func (c *counted) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	c.scans.Add(1)
	return c.Store.Scan(ctx, q)
}

func (c *counted) Get(ctx context.Context, pk string) (store.Item, error) {
	c.gets.Add(1)
	it, err := c.Store.Get(ctx, pk)
	if err == nil {
		c.returned.Add(1)
	}
	return it, err
}

func (c *counted) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	c.batchKeys.Add(int64(len(pks)))
	items, err := c.Store.(store.BatchGetter).BatchGet(ctx, pks)
	c.returned.Add(int64(len(items)))
	return items, err
}

func (c *counted) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		for it, err := range c.Store.(store.Querier).Query(ctx, q) {
			if err == nil {
				c.returned.Add(1)
			}
			if !yield(it, err) {
				return
			}
		}
	}
}

// QueriesConsistent is the wrapped store's.
func (c *counted) QueriesConsistent() bool { return store.QueriesConsistent(c.Store) }

func (c *counted) reset() {
	c.scans.Store(0)
	c.batchKeys.Store(0)
	c.gets.Store(0)
	c.returned.Store(0)
}

func deps(list []breaker.Override) string {
	var out []string
	for _, o := range list {
		out = append(out, o.Dependency)
	}
	return strings.Join(out, ",")
}

// ListForWith reads the overrides, not the table: on DynamoDB the known keys
// by a consistent batch read beside the lists index; on the embedded store
// (consistent index reads) the index alone, and by key only a known
// dependency the index does not hold. Every override is read once.
func TestListForReadsByKey(t *testing.T) {
	t.Parallel()
	for name, base := range map[string]store.Store{"sqlite": openStore(t), "dynamo": dynamotest.NewStore(t, endpoint)} {
		t.Run(name, func(t *testing.T) {
			s := &counted{Store: base}
			ov := newLevers(s, clocktest.NewFake(t0))
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
			s.reset() // the forces' own reads
			list, _, err := ov.ListForWith(t.Context(), []string{"openai", "core-api"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if deps(list) != "legacy-tool,openai" {
				t.Errorf("ListForWith = %s, want legacy-tool,openai", deps(list))
			}
			if s.scans.Load() != 0 {
				t.Errorf("ListForWith scanned the table %d times", s.scans.Load())
			}
			// DynamoDB: the two known keys batch-read (openai's item from
			// there, the index's copy not decoded), the index's two. The
			// embedded store: the index's two, and core-api, which the index
			// does not hold, read by key (absent).
			wantBatch, wantGets, wantReturned := int64(2), int64(0), int64(3)
			if name == "sqlite" {
				wantBatch, wantGets, wantReturned = 0, 1, 2
			}
			if s.batchKeys.Load() != wantBatch || s.gets.Load() != wantGets || s.returned.Load() != wantReturned {
				t.Errorf("ListForWith batch-read %d keys, got %d, and read %d items; want %d, %d, %d",
					s.batchKeys.Load(), s.gets.Load(), s.returned.Load(), wantBatch, wantGets, wantReturned)
			}
			// A clear shows at once.
			if _, err := ov.Clear(t.Context(), "legacy-tool"); err != nil {
				t.Fatal(err)
			}
			if list, _, err := ov.ListForWith(t.Context(), []string{"openai"}, nil); err != nil || deps(list) != "openai" {
				t.Errorf("ListForWith after clear = %s, %v", deps(list), err)
			}
		})
	}
}

// stale answers index queries with another state of the items than they
// have (a global secondary index that has not caught up): the override of
// dep as it was before its last write.
type stale struct {
	*counted
	was map[string]store.Item
}

func (s *stale) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		for it, err := range s.counted.Query(ctx, q) {
			if old, ok := s.was[it.PK()]; ok && err == nil {
				it = old
			}
			if !yield(it, err) {
				return
			}
		}
	}
}

// A known dependency's override is the item as stored, whatever the index
// says (its read by key is consistent); another's is the index's, which on
// DynamoDB may lag (docs/contracts/store.md); a known override written
// without the index attributes is listed in its place by dependency.
func TestListForShowsKnownOverridesAsStored(t *testing.T) {
	t.Parallel()
	base := &counted{Store: dynamotest.NewStore(t, endpoint)}
	ov := newLevers(base, clocktest.NewFake(t0))
	for _, dep := range []string{"a-unknown", "openai", "zz-unknown"} {
		if _, err := ov.Force(t.Context(), forceReq{Dependency: dep, Reason: "first", Actor: "a", For: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	was := map[string]store.Item{}
	for _, dep := range []string{"a-unknown", "openai"} {
		it, err := base.Get(t.Context(), breaker.OverrideKey(dep))
		if err != nil {
			t.Fatal(err)
		}
		was[it.PK()] = it
		if _, err := ov.Force(t.Context(), forceReq{Dependency: dep, Reason: "second", Actor: "a", For: time.Hour, Overwrite: true}); err != nil {
			t.Fatal(err)
		}
	}
	// core-api's override, written by hand without the index attributes.
	if err := base.Put(t.Context(), store.Item{store.PK: "breaker#core-api", "state": "forced_open", "reason": "by hand", "actor": "x",
		"created_at": t0.UnixMilli(), "version": int64(1)}, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	list, _, err := newLevers(&stale{counted: base, was: was}, clocktest.NewFake(t0)).ListForWith(t.Context(), []string{"openai", "core-api"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range list {
		got = append(got, o.Dependency+":"+o.Reason)
	}
	if want := "a-unknown:first,core-api:by hand,openai:second,zz-unknown:first"; strings.Join(got, ",") != want {
		t.Errorf("ListForWith = %s, want %s", strings.Join(got, ","), want)
	}
}

// The embedded store's list of 2,000 overrides reads each item once: the
// index returns them whole and consistently, and nothing is read again by
// key.
func TestListForOnTheEmbeddedStoreReadsEachOverrideOnce(t *testing.T) {
	t.Parallel()
	base := openStore(t)
	var known []string
	for i := range 2000 {
		o := breaker.Override{Dependency: fmt.Sprintf("dep-%04d", i), State: breaker.OverrideStateForcedOpen, Reason: "r", Actor: "a",
			CreatedAt: t0, Version: 1}
		if err := base.Put(t.Context(), o.Item(), store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			known = append(known, o.Dependency)
		}
	}
	s := &counted{Store: base}
	list, _, err := newLevers(s, clocktest.NewFake(t0)).ListForWith(t.Context(), known, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2000 || s.returned.Load() != 2000 || s.batchKeys.Load() != 0 || s.gets.Load() != 0 {
		t.Errorf("listed %d overrides reading %d items (%d keys batch-read, %d gets); want 2000, each read once",
			len(list), s.returned.Load(), s.batchKeys.Load(), s.gets.Load())
	}
}

func TestListForFallsBackOnLegacyTable(t *testing.T) {
	t.Parallel()
	base := dynamotest.NewLegacyStore(t, endpoint)
	s := &counted{Store: base}
	ov := newLevers(s, clocktest.NewFake(t0))
	var notices []string
	ov.SetNotice(func(m string) { notices = append(notices, m) })
	if _, err := ov.Force(t.Context(), forceReq{Dependency: "openai", Reason: "r", Actor: "a", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		list, _, err := ov.ListForWith(t.Context(), []string{"openai"}, nil)
		if err != nil || deps(list) != "openai" {
			t.Fatalf("ListForWith on a legacy table = %s, %v", deps(list), err)
		}
	}
	if s.scans.Load() != 2 || len(notices) != 1 || !strings.Contains(notices[0], "store migrate") {
		t.Errorf("scans %d, notices %q; want a scan per list and one notice naming `store migrate`", s.scans.Load(), notices)
	}
}

// A table made before the lists index lists from the overrides index (its
// keys, then one consistent batch read), and says so once with the fix.
func TestListForReadsTheOverridesIndexUntilTheListsIndex(t *testing.T) {
	t.Parallel()
	s := &counted{Store: dynamotest.NewStoreWithIndexes(t, endpoint, len(store.Indexes)-1)}
	ov := newLevers(s, clocktest.NewFake(t0))
	var notices []string
	ov.SetNotice(func(m string) { notices = append(notices, m) })
	for _, dep := range []string{"openai", "other"} {
		if _, err := ov.Force(t.Context(), forceReq{Dependency: dep, Reason: "r", Actor: "a", For: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		s.reset()
		list, _, err := ov.ListForWith(t.Context(), []string{"openai"}, nil)
		if err != nil || deps(list) != "openai,other" {
			t.Fatalf("ListForWith on a table without the lists index = %s, %v", deps(list), err)
		}
		// openai beside the query of the missing lists index, then openai
		// and the overrides index's two.
		if s.scans.Load() != 0 || s.batchKeys.Load() != 4 {
			t.Errorf("ListForWith scanned %d times and batch-read %d keys; want no scan, 1 + 3 keys", s.scans.Load(), s.batchKeys.Load())
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "store migrate") || !strings.Contains(notices[0], "overrides index") {
		t.Errorf("notices %q; want one naming `store migrate` and the overrides index", notices)
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
	ov := newLevers(s, clocktest.NewFake(t0))
	// An override a koshactl before the lists index wrote: in the
	// overrides index only.
	before := old.Clone()
	before[store.PK], before[store.IndexOverrides.Attr] = "breaker#before-lists", "breaker"
	if err := s.Put(t.Context(), before, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if list, _, _ := ov.ListForWith(t.Context(), nil, nil); len(list) != 0 {
		t.Fatalf("an item without the lists index attributes was listed by index: %s", deps(list))
	}
	if rep, err := ov.Backfill(t.Context(), true); err != nil || rep.Updated != 2 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if rep, err := ov.Backfill(t.Context(), false); err != nil || rep.Updated != 2 || rep.Examined != 3 || len(rep.Unindexed) != 1 || rep.Unindexed[0].PK != long.PK() || !strings.Contains(rep.Unindexed[0].Why, "sort key") {
		t.Fatalf("backfill: %+v, %v", rep, err)
	}
	if list, _, _ := ov.ListForWith(t.Context(), nil, nil); deps(list) != "before-lists,other-tool" || list[1].Version != 3 {
		t.Errorf("after the backfill: %+v", list)
	}
	if rep, err := ov.Backfill(t.Context(), false); err != nil || rep.Updated != 0 {
		t.Errorf("a second backfill: %+v, %v; want nothing to do", rep, err)
	}
}

// BenchmarkListForOnTheEmbeddedStore lists 50,000 overrides of the local
// store (four of them the context's known dependencies) and reports the
// items the store returned per override listed (reads/override: 1, each
// read once) besides the time.
func BenchmarkListForOnTheEmbeddedStore(b *testing.B) {
	base, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "kosha.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = base.Close() })
	const n = 50_000
	for i := 0; i < n; i += store.MaxChangeOps {
		token, err := store.NewWriteID()
		if err != nil {
			b.Fatal(err)
		}
		var ops []store.Op
		for j := i; j < min(i+store.MaxChangeOps, n); j++ {
			o := breaker.Override{Dependency: fmt.Sprintf("dep-%05d", j), State: breaker.OverrideStateForcedOpen, Reason: "bench",
				Actor: "arn:aws:sts::123456789012:assumed-role/ops/alice", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), Version: 1, WriteID: token}
			ops = append(ops, store.PutOp(o.Item(), store.IfAbsent()))
		}
		if err := base.Transact(context.Background(), store.Change{Token: token, Ops: ops, Proof: ops[0].PK()}); err != nil {
			b.Fatal(err)
		}
	}
	s := &counted{Store: base}
	ov := newLevers(s, clocktest.NewFake(t0))
	known := []string{"dep-00000", "dep-12345", "dep-33333", "dep-49999"}
	var listed int
	s.reset()
	for b.Loop() {
		list, _, err := ov.ListForWith(b.Context(), known, nil)
		if err != nil || len(list) != n {
			b.Fatalf("ListForWith: %d overrides, %v", len(list), err)
		}
		listed += len(list)
	}
	b.ReportMetric(float64(s.returned.Load())/float64(listed), "reads/override")
}
