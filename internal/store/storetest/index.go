package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

// RunCapabilities runs the conformance suite of what both control-plane
// backends offer beyond [store.Store]: batch reads, index queries and scan
// statistics. (The sandbox's in-memory store offers none of them; readers
// fall back to Get and Scan on it.)
func RunCapabilities(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"BatchGet", testBatchGet},
		{"Query", testQuery},
		{"ScanStats", testScanStats},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func testBatchGet(t *testing.T, s store.Store) {
	bg, ok := s.(store.BatchGetter)
	if !ok {
		t.Fatalf("%T does not implement store.BatchGetter", s)
	}
	// More than two requests' worth of keys, some absent, one named twice.
	var keys []string
	for i := range 2*store.MaxBatchGet + 30 {
		pk := fmt.Sprintf("bg#%03d", i)
		keys = append(keys, pk)
		if i%3 != 0 {
			mustPut(t, s, store.Item{store.PK: pk, "i": int64(i)})
		}
	}
	keys = append(keys, keys[1])
	got, err := bg.BatchGet(ctx(t), keys)
	if err != nil {
		t.Fatalf("BatchGet(%d keys): %v", len(keys), err)
	}
	want := 0
	for i := range 2*store.MaxBatchGet + 30 {
		pk := fmt.Sprintf("bg#%03d", i)
		it, found := got[pk]
		if i%3 == 0 {
			if found {
				t.Errorf("BatchGet returned absent key %s: %v", pk, show(it))
			}
			continue
		}
		want++
		if !found {
			t.Errorf("BatchGet left out %s", pk)
			continue
		}
		sameItem(t, "batch-read item", it, store.Item{store.PK: pk, "i": int64(i)})
	}
	if len(got) != want {
		t.Errorf("BatchGet returned %d items, want %d", len(got), want)
	}
	// A write is seen by the next batch read (consistent reads).
	mustPut(t, s, store.Item{store.PK: "bg#000", "i": int64(-1)})
	got, err = bg.BatchGet(ctx(t), []string{"bg#000"})
	if err != nil {
		t.Fatalf("BatchGet after Put: %v", err)
	}
	sameItem(t, "item after Put", got["bg#000"], store.Item{store.PK: "bg#000", "i": int64(-1)})
	if got, err := bg.BatchGet(ctx(t), nil); err != nil || len(got) != 0 {
		t.Errorf("BatchGet(no keys) = %v, %v; want an empty map", got, err)
	}
}

func query(t *testing.T, s store.Store, q store.IndexQuery) []string {
	t.Helper()
	qr, ok := s.(store.Querier)
	if !ok {
		t.Fatalf("%T does not implement store.Querier", s)
	}
	var out []string
	for it, err := range qr.Query(ctx(t), q) {
		if err != nil {
			t.Fatalf("Query(%+v): %v", q, err)
		}
		out = append(out, it.PK())
	}
	return out
}

func testQuery(t *testing.T, s store.Store) {
	ix := store.IndexAuditDay
	var day1 []string
	for i := range 30 {
		pk := fmt.Sprintf("audit#%013d#x", 1000+i)
		day := "2026-12-01"
		if i >= 20 {
			day = "2026-12-02"
		} else {
			day1 = append(day1, pk)
		}
		mustPut(t, s, store.Item{store.PK: pk, ix.Attr: day, "i": int64(i)})
	}
	// Items without the attribute (or with it as a number) are not indexed.
	mustPut(t, s, store.Item{store.PK: "audit#0000000001005#y"})
	mustPut(t, s, store.Item{store.PK: "rl#a", "tokens": int64(3)})

	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01"}); !slices.Equal(got, day1) {
		t.Errorf("Query(day 1) = %q, want %q", got, day1)
	}
	desc := slices.Clone(day1)
	slices.Reverse(desc)
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01", Descending: true}); !slices.Equal(got, desc) {
		t.Errorf("Query(day 1, descending) = %q, want %q", got, desc)
	}
	var stats store.ReadStats
	got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01", Descending: true, Limit: 3, Stats: &stats})
	if !slices.Equal(got, desc[:3]) {
		t.Errorf("Query(limit 3) = %q, want %q", got, desc[:3])
	}
	if stats.Examined() != 3 {
		t.Errorf("Query(limit 3) examined %d items, want 3", stats.Examined())
	}
	from, to := fmt.Sprintf("audit#%013d", 1005), fmt.Sprintf("audit#%013d~", 1008)
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01", From: from, To: to}); !slices.Equal(got, day1[5:9]) {
		t.Errorf("Query(%s..%s) = %q, want %q", from, to, got, day1[5:9])
	}
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01", From: from}); !slices.Equal(got, day1[5:]) {
		t.Errorf("Query(from %s) = %q, want %q", from, got, day1[5:])
	}
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01", To: to, Descending: true, Limit: 2}); !slices.Equal(got, []string{day1[8], day1[7]}) {
		t.Errorf("Query(to %s, descending, limit 2) = %q", to, got)
	}
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01", From: to, To: from}); len(got) != 0 {
		t.Errorf("Query(empty range) = %q", got)
	}
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-11-30"}); len(got) != 0 {
		t.Errorf("Query(another day) = %q", got)
	}
	// A rewrite that drops the attribute leaves the index; one that changes
	// it moves the item.
	mustPut(t, s, store.Item{store.PK: day1[0]})
	mustPut(t, s, store.Item{store.PK: day1[1], ix.Attr: "2026-12-02"})
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "2026-12-01", Limit: 1}); !slices.Equal(got, day1[2:3]) {
		t.Errorf("Query after rewrites = %q, want %q", got, day1[2:3])
	}
	// Every index answers on its own attribute; a keys-only index still
	// yields the pk.
	mustPut(t, s, store.Item{store.PK: "breaker#openai", store.IndexOverrides.Attr: "breaker"})
	if got := query(t, s, store.IndexQuery{Index: store.IndexOverrides, Key: "breaker"}); !slices.Equal(got, []string{"breaker#openai"}) {
		t.Errorf("Query(overrides) = %q", got)
	}
	testSortedQuery(t, s)
}

// testSortedQuery queries an index that sorts by its own attribute: the
// order, the bounds and the limit are the sort key's, not the pk's; an item
// lacking either attribute is not in it; equal sort keys are all yielded.
func testSortedQuery(t *testing.T, s store.Store) {
	ix := store.IndexLists
	// Sort keys in the reverse order of the pks.
	var bySort []string
	for i := range 8 {
		pk := fmt.Sprintf("sorted#%d", 9-i)
		mustPut(t, s, store.Item{store.PK: pk, ix.Attr: "p", ix.Sort: fmt.Sprintf("%02d", i)})
		bySort = append(bySort, pk)
	}
	mustPut(t, s, store.Item{store.PK: "sorted#tie", ix.Attr: "p", ix.Sort: "03"})
	mustPut(t, s, store.Item{store.PK: "sorted#no-sort", ix.Attr: "p"})
	mustPut(t, s, store.Item{store.PK: "sorted#no-key", ix.Sort: "04"})
	mustPut(t, s, store.Item{store.PK: "sorted#other", ix.Attr: "q", ix.Sort: "05"})
	got := query(t, s, store.IndexQuery{Index: ix, Key: "p"})
	want := slices.Insert(slices.Clone(bySort), 4, "sorted#tie")
	if len(got) != len(want) || !slices.Equal(got[:3], want[:3]) || !slices.Equal(got[5:], want[5:]) ||
		!slices.Contains(got[3:5], "sorted#tie") || !slices.Contains(got[3:5], bySort[3]) {
		t.Errorf("Query(sorted index) = %q, want by sort key %q", got, want)
	}
	desc := query(t, s, store.IndexQuery{Index: ix, Key: "p", Descending: true, Limit: 2})
	if !slices.Equal(desc, []string{bySort[7], bySort[6]}) {
		t.Errorf("Query(sorted index, descending, limit 2) = %q, want %q", desc, []string{bySort[7], bySort[6]})
	}
	if got := query(t, s, store.IndexQuery{Index: ix, Key: "p", From: "05", To: "06~"}); !slices.Equal(got, bySort[5:7]) {
		t.Errorf("Query(sorted index, 05..06~) = %q, want %q", got, bySort[5:7])
	}
}

func testScanStats(t *testing.T, s store.Store) {
	for i := range 25 {
		mustPut(t, s, store.Item{store.PK: fmt.Sprintf("st#%02d", i)})
	}
	var stats store.ReadStats
	n := len(collect(t, s, store.ScanQuery{Prefix: "st#", PageSize: 10, Stats: &stats}))
	if n != 25 || stats.Examined() < 25 || stats.Requests() < 3 {
		t.Errorf("Scan of 25 items in pages of 10: %d items, stats examined %d in %d requests; want 25 in at least 3",
			n, stats.Examined(), stats.Requests())
	}
}
