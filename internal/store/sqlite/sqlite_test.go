package sqlite_test

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
)

// Environment of the child processes TestSeveralProcesses starts from this
// test binary.
const (
	childDBEnv = "KOSHA_SQLITE_TEST_CHILD_DB"
	childNEnv  = "KOSHA_SQLITE_TEST_CHILD_N"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(childDBEnv); path != "" {
		os.Exit(child(path))
	}
	os.Exit(m.Run())
}

func open(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	opener := func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "kosha.db"))
	}
	storetest.Run(t, opener)
	storetest.RunCapabilities(t, opener)
}

// TestConformanceTwoHandles runs the whole suite with every call alternating
// between two Stores on one file, as two processes would share it.
// TestConformanceSweeping runs the suite on a store opened as koshactl opens
// a local context's: collecting expired items as it writes.
func TestConformanceSweeping(t *testing.T) {
	t.Parallel()
	opener := func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "kosha.db"), sqlite.WithSweep(clock.Real{}))
	}
	storetest.Run(t, opener)
	storetest.RunCapabilities(t, opener)
}

func TestConformanceTwoHandles(t *testing.T) {
	t.Parallel()
	opener := func(t *testing.T) store.Store {
		path := filepath.Join(t.TempDir(), "kosha.db")
		return &alternating{handles: [2]store.Store{open(t, path), open(t, path)}}
	}
	storetest.Run(t, opener)
	storetest.RunCapabilities(t, opener)
}

// alternating sends each call to the next of its handles in turn.
type alternating struct {
	handles [2]store.Store
	n       atomic.Uint64
}

func (a *alternating) next() store.Store { return a.handles[a.n.Add(1)%2] }

func (a *alternating) Get(ctx context.Context, pk string) (store.Item, error) {
	return a.next().Get(ctx, pk)
}

func (a *alternating) Put(ctx context.Context, it store.Item, c store.Condition) error {
	return a.next().Put(ctx, it, c)
}

func (a *alternating) Delete(ctx context.Context, pk string, c store.Condition) error {
	return a.next().Delete(ctx, pk, c)
}

func (a *alternating) Transact(ctx context.Context, c store.Change) error {
	return a.next().Transact(ctx, c)
}

func (a *alternating) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	return a.next().Scan(ctx, q)
}

func (a *alternating) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	return a.next().(store.BatchGetter).BatchGet(ctx, pks)
}

func (a *alternating) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	return a.next().(store.Querier).Query(ctx, q)
}

func (a *alternating) Describe() string { return a.handles[0].Describe() }
func (a *alternating) Close() error     { return nil }

// child is the body of one process of TestSeveralProcesses: it makes N
// compare-and-set increments of one counter and reports how many races it
// lost.
func child(path string) int {
	n, err := strconv.Atoi(os.Getenv(childNEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	lost := 0
	for won := 0; won < n; {
		ok, err := storetest.Increment(context.Background(), s, "counter#procs")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if ok {
			won++
		} else {
			lost++
		}
	}
	fmt.Println(lost)
	return 0
}

func TestSeveralProcesses(t *testing.T) {
	t.Parallel()
	const procs, each = 4, 40
	path := filepath.Join(t.TempDir(), "shared.db")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range procs {
		cmd := exec.CommandContext(t.Context(), self, "-test.run=^$") //nolint:gosec // G204: re-runs this test binary as a child
		cmd.Env = append(os.Environ(), childDBEnv+"="+path, childNEnv+"="+strconv.Itoa(each))
		out := &strings.Builder{}
		cmd.Stdout = out
		cmd.Stderr = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		outs = append(outs, out)
	}
	// This process races them too, through its own handle.
	s := open(t, path)
	for won := 0; won < each; {
		ok, err := storetest.Increment(context.Background(), s, "counter#procs")
		if err != nil {
			t.Fatalf("increment in the parent: %v", err)
		}
		if ok {
			won++
		}
	}
	lost := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v: %s", i, err, outs[i])
		}
		n, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
		if err != nil {
			t.Fatalf("child %d printed %q", i, outs[i])
		}
		lost += n
	}
	it, err := s.Get(context.Background(), "counter#procs")
	if err != nil {
		t.Fatal(err)
	}
	count, _ := it.Int("count")
	if want := int64((procs + 1) * each); count != want {
		t.Errorf("count = %d after %d increments across %d processes: lost updates", count, want, procs+1)
	}
	t.Logf("%d processes, %d increments, %d lost races retried", procs+1, (procs+1)*each, lost)
}

func TestConditionErrorCarriesCurrentItem(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "kosha.db"))
	ctx := context.Background()
	cur := store.Item{store.PK: "rl#a", "tokens": 3.5, "updated_at": int64(1000)}
	if err := s.Put(ctx, cur, store.Always()); err != nil {
		t.Fatal(err)
	}
	err := s.Put(ctx, store.Item{store.PK: "rl#a", "tokens": 2.5}, store.IfEquals("updated_at", int64(999)))
	var ce *store.ConditionError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ConditionError", err)
	}
	if ce.Current == nil || ce.Current.Str(store.PK) != "rl#a" {
		t.Fatalf("Current = %v, want the stored item", ce.Current)
	}
	if v, _ := ce.Current.Float("tokens"); v != 3.5 {
		t.Errorf("Current tokens = %v, want 3.5", v)
	}
}

func TestFileModesAndLayout(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "kosha")
	path := filepath.Join(dir, "local.db")
	s := open(t, path)
	if err := s.Put(context.Background(), store.Item{store.PK: "x"}, store.Always()); err != nil {
		t.Fatal(err)
	}
	if s.Describe() != "sqlite "+path {
		t.Errorf("Describe = %q", s.Describe())
	}
	check := func(p string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode %v, want %v", filepath.Base(p), got, want)
		}
	}
	check(dir, 0o700)
	check(filepath.Dir(dir), 0o700)
	check(path, 0o600)
	check(path+"-wal", 0o600) // WAL mode is on, and the log is private too
	check(path+"-shm", 0o600)
}

func TestReopenKeepsItems(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kosha.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), store.Item{store.PK: "breaker#db", "state": "forced_open", "n": 0.25}, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	it, err := open(t, path).Get(context.Background(), "breaker#db")
	if err != nil {
		t.Fatalf("Get after reopen: %v", err)
	}
	if it.Str("state") != "forced_open" {
		t.Errorf("state = %q after reopen", it.Str("state"))
	}
}

func TestOddPaths(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"with space.db", "what?.db", "hash#.db", "pct%20.db", "ünï.db"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			s := open(t, path)
			if err := s.Put(context.Background(), store.Item{store.PK: "x"}, store.Always()); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("database not at %s: %v", path, err)
			}
		})
	}
}

func TestOpenFailureIsUnavailable(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), filepath.Join(file, "kosha.db"))
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open under a regular file: %v, want ErrUnavailable", err)
	}
	if _, err := sqlite.Open(context.Background(), ""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kosha.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "upgrade koshactl") {
		t.Errorf("Open of a newer schema: %v, want an error saying to upgrade", err)
	}
}

func TestSweep(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "kosha.db"))
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	items := map[string]any{
		"long-expired":       now.Add(-3 * time.Hour).Unix(),
		"float-long-expired": float64(now.Add(-2*time.Hour).Unix()) + 0.5,
		"just-expired":       now.Add(-time.Minute).Unix(), // within the grace: kept
		"live":               now.Add(time.Hour).Unix(),
		"string-ttl":         "0", // not a number: never swept, as on DynamoDB
		"no-ttl":             nil,
	}
	for pk, ttl := range items {
		it := store.Item{store.PK: pk}
		if ttl != nil {
			it[store.TTLAttr] = ttl
		}
		if err := s.Put(ctx, it, store.Always()); err != nil {
			t.Fatal(err)
		}
	}
	// An item rewritten without a ttl loses its ttl.
	if err := s.Put(ctx, store.Item{store.PK: "ttl-removed", store.TTLAttr: int64(1)}, store.Always()); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, store.Item{store.PK: "ttl-removed"}, store.Always()); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("Sweep removed %d items, want 2", n)
	}
	for pk := range items {
		_, err := s.Get(ctx, pk)
		gone := errors.Is(err, store.ErrNotFound)
		if want := strings.HasSuffix(pk, "long-expired"); gone != want {
			t.Errorf("%s: gone = %v after Sweep, want %v", pk, gone, want)
		}
	}
	if _, err := s.Get(ctx, "ttl-removed"); err != nil {
		t.Errorf("item whose ttl was removed: %v", err)
	}
}

// present reports which of pks are still stored.
func present(t *testing.T, s *sqlite.Store, pks ...string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, pk := range pks {
		_, err := s.Get(context.Background(), pk)
		switch {
		case err == nil:
			got[pk] = true
		case errors.Is(err, store.ErrNotFound):
			got[pk] = false
		default:
			t.Fatal(err)
		}
	}
	return got
}

func put(t *testing.T, s store.Store, pk string, ttl time.Time) {
	t.Helper()
	if err := s.Put(context.Background(), store.Item{store.PK: pk, store.TTLAttr: ttl.Unix()}, store.Always()); err != nil {
		t.Fatal(err)
	}
}

// TestWritesCollectExpiredItems: a store opened WithSweep deletes, as
// DynamoDB's TTL does, the items whose ttl has passed (by more than the
// grace) when it next writes, and keeps the live ones, an item whose ttl was
// extended before the collection, and audit records within their retention.
func TestWritesCollectExpiredItems(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kosha.db")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(start)
	s := open(t, path, sqlite.WithSweep(clk))
	// A second handle without sweeping writes the items, so nothing is
	// collected before the clock moves.
	w := open(t, path)
	put(t, w, "override#expired", start.Add(time.Hour))
	put(t, w, "override#extended", start.Add(time.Hour))
	put(t, w, "override#live", start.Add(5*time.Hour))
	put(t, w, "audit#record", start.Add(90*24*time.Hour))
	if err := w.Put(context.Background(), store.Item{store.PK: "config#no-ttl"}, store.Always()); err != nil {
		t.Fatal(err)
	}

	clk.Advance(3 * time.Hour) // "expired" and "extended" are two hours past their ttl
	put(t, w, "override#extended", clk.Now().Add(time.Hour))
	// Nothing was collected yet: the writes went through the handle that
	// does not sweep, and reads never collect.
	if got := present(t, s, "override#expired"); !got["override#expired"] {
		t.Fatal("an expired item was collected before a sweeping write")
	}

	put(t, s, "breaker#other", clk.Now().Add(time.Hour)) // the sweeping handle's first write
	want := map[string]bool{"override#expired": false, "override#extended": true, "override#live": true,
		"audit#record": true, "config#no-ttl": true, "breaker#other": true}
	if got := present(t, s, "override#expired", "override#extended", "override#live", "audit#record", "config#no-ttl", "breaker#other"); !maps.Equal(got, want) {
		t.Errorf("after a write: present = %v, want %v", got, want)
	}
}

// TestSweepFollowsTheWrite: a write's conditions are checked against the
// items as stored before anything is collected, so taking over an expired
// claim (conditional on the claim's ttl) is never refused because the
// collection removed the claim first, and the claim it renews stays.
func TestSweepFollowsTheWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kosha.db")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(start)
	s := open(t, path, sqlite.WithSweep(clk))
	put(t, open(t, path), "claim#x", start)
	clk.Advance(2 * time.Hour)
	renewed := store.Item{store.PK: "claim#x", store.TTLAttr: clk.Now().Add(time.Hour).Unix()}
	if err := s.Put(context.Background(), renewed, store.IfEquals(store.TTLAttr, start.Unix())); err != nil {
		t.Fatalf("take over an expired claim: %v", err)
	}
	if got := present(t, s, "claim#x"); !got["claim#x"] {
		t.Error("the renewed claim was collected")
	}
}

// TestSweepIsBounded: one write collects at most SweepBatch items; while a
// batch comes back full the next write collects again, and after one that
// did not, the store waits SweepInterval on its clock.
func TestSweepIsBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kosha.db")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktest.NewFake(start)
	s := open(t, path, sqlite.WithSweep(clk))
	w := open(t, path)
	ctx := context.Background()
	for i := range sqlite.SweepBatch + 5 {
		put(t, w, fmt.Sprintf("claim#%03d", i), start)
	}
	put(t, w, "lever", start.Add(time.Hour))
	count := func() int {
		n := 0
		for _, err := range s.Scan(ctx, store.ScanQuery{Prefix: "claim#"}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	clk.Advance(2 * time.Hour)

	// A write the conditions refuse collects nothing.
	err := s.Put(ctx, store.Item{store.PK: "lever"}, store.IfAbsent())
	if !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("conditional put over an item: %v, want ErrConditionFailed", err)
	}
	if got := count(); got != sqlite.SweepBatch+5 {
		t.Fatalf("a refused write left %d expired items, want all %d", got, sqlite.SweepBatch+5)
	}
	put(t, s, "lever", clk.Now().Add(time.Hour))
	if got := count(); got != 5 {
		t.Fatalf("after the first write %d expired items are left, want 5 (one batch of %d collected)", got, sqlite.SweepBatch)
	}
	put(t, w, "claim#late", clk.Now().Add(-2*time.Hour)) // expired, written after the batch
	put(t, s, "lever", clk.Now().Add(time.Hour))         // the batch was full: collect again
	if got := count(); got != 0 {
		t.Fatalf("after the second write %d expired items are left, want 0", got)
	}

	put(t, w, "claim#later", clk.Now().Add(-2*time.Hour))
	put(t, s, "lever", clk.Now().Add(time.Hour)) // within SweepInterval of the last collection
	if got := count(); got != 1 {
		t.Fatalf("a write within SweepInterval of the last collection left %d expired items, want 1 (not collected yet)", got)
	}
	clk.Advance(sqlite.SweepInterval)
	put(t, s, "lever", clk.Now().Add(time.Hour))
	if got := count(); got != 0 {
		t.Fatalf("a write SweepInterval after the last collection left %d expired items, want 0", got)
	}
}

func TestClosedStoreFails(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), "x"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get on a closed store: %v", err)
	}
}

func BenchmarkPutGet(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "kosha.db"))
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pk := "rl#client-" + strconv.Itoa(i%64)
		i++
		if err := s.Put(ctx, store.Item{store.PK: pk, "tokens": 19.5, "updated_at": int64(i)}, store.Always()); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, pk); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutCollecting measures one Put: on a store that does not collect
// ("plain"), on one opened WithSweep when no collection is due ("idle", the
// steady state between collections) and when the Put also collects a full
// batch of SweepBatch expired items ("batch"; run it with -benchtime=200x,
// its setup writes the batch each time).
func BenchmarkPutCollecting(b *testing.B) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name         string
		sweep, batch bool
	}{{"plain", false, false}, {"idle", true, false}, {"batch", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "kosha.db")
			clk := clocktest.NewFake(start)
			var opts []sqlite.Option
			if bc.sweep {
				opts = append(opts, sqlite.WithSweep(clk))
			}
			s, w := open(b, path, opts...), open(b, path)
			ctx := context.Background()
			item := store.Item{store.PK: "lever", store.TTLAttr: start.Add(10000 * time.Hour).Unix()}
			if err := s.Put(ctx, item, store.Always()); err != nil { // the first collection, done
				b.Fatal(err)
			}
			for i := range 1000 { // live items the collection passes over
				if err := w.Put(ctx, store.Item{store.PK: fmt.Sprintf("live#%04d", i), store.TTLAttr: start.Add(1000 * time.Hour).Unix()}, store.Always()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if bc.batch {
					b.StopTimer()
					for range sqlite.SweepBatch {
						n++
						if err := w.Put(ctx, store.Item{store.PK: fmt.Sprintf("claim#%06d", n), store.TTLAttr: clk.Now().Unix()}, store.Always()); err != nil {
							b.Fatal(err)
						}
					}
					clk.Advance(sqlite.SweepInterval + sqlite.SweepGrace + time.Second)
					b.StartTimer()
				}
				if err := s.Put(ctx, item, store.Always()); err != nil {
					b.Fatal(err)
				}
			}
			if bc.batch {
				left := 0
				for _, err := range s.Scan(ctx, store.ScanQuery{Prefix: "claim#"}) {
					if err != nil {
						b.Fatal(err)
					}
					left++
				}
				if left > 0 {
					b.Fatalf("%d of %d expired items survived their batches", left, n)
				}
			}
		})
	}
}

func BenchmarkIncrementParallel(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "kosha.db"))
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		pk := fmt.Sprintf("counter#%d", n.Add(1))
		for pb.Next() {
			if _, err := storetest.Increment(context.Background(), s, pk); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestOpenMigratesVersion1 opens a file written by the schema before the
// secondary indexes (user_version 1) and queries an index over its items.
func TestOpenMigratesVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kosha.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE items (pk TEXT PRIMARY KEY NOT NULL, attrs TEXT NOT NULL, ttl INTEGER) WITHOUT ROWID`,
		`CREATE INDEX items_ttl ON items (ttl) WHERE ttl IS NOT NULL`,
		`INSERT INTO items (pk, attrs) VALUES ('audit#1', '{"ix_audit_day":{"S":"2026-12-01"}}'), ('rl#a', '{}')`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	var got []string
	for it, err := range s.Query(t.Context(), store.IndexQuery{Index: store.IndexAuditDay, Key: "2026-12-01"}) {
		if err != nil {
			t.Fatalf("Query after migration: %v", err)
		}
		got = append(got, it.PK())
	}
	if len(got) != 1 || got[0] != "audit#1" {
		t.Errorf("Query after migration = %q, want [audit#1]", got)
	}
	// The query is answered by the index, not a scan of the table.
	db2, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	var plan strings.Builder
	rows, err := db2.QueryContext(t.Context(), `EXPLAIN QUERY PLAN SELECT pk, attrs FROM items
		WHERE json_extract(attrs, '$.ix_audit_day.S') = ? ORDER BY pk DESC LIMIT 5`, "2026-12-01")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "ix_audit_by_day") {
		t.Errorf("query plan does not use the index:\n%s", plan.String())
	}
}

// Commands started together on a new context (`make demo` starts the
// sandbox and the dashboard at once) open a file that does not exist yet.
// The openers race to switch it to WAL, and SQLite refuses a loser at once,
// without its busy timeout (a few rounds in a few hundred on the code
// before the retry); each opener must still open and write.
func TestConcurrentOpensOfANewFile(t *testing.T) {
	t.Parallel()
	// Each round is a new file and 16 processes' worth of openers racing to
	// create it. The rounds are independent, so ten run at once: the losers'
	// back-off (migrate waits 5 ms, doubling to 200 ms) overlaps instead of
	// adding up (one round after another, the 100 took 36–45 s of make test).
	const openers, rounds, together = 16, 100, 10
	sem := make(chan struct{}, together)
	var all sync.WaitGroup
	for round := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("new-%d.db", round))
		sem <- struct{}{}
		all.Go(func() {
			defer func() { <-sem }()
			if err := openConcurrently(t.Context(), path, openers); err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		})
	}
	all.Wait()
}

// openConcurrently has n openers open the store at path at once, each putting
// an item of its own, then checks that all n items are there.
func openConcurrently(ctx context.Context, path string, n int) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = s.Close() }()
			errs <- s.Put(ctx, store.Item{"pk": fmt.Sprintf("opener#%d", i)}, store.IfAbsent())
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	written := 0
	for _, err := range s.Scan(ctx, store.ScanQuery{Prefix: "opener#"}) {
		if err != nil {
			return err
		}
		written++
	}
	if written != n {
		return fmt.Errorf("%d items written, want %d", written, n)
	}
	return nil
}

// TestOpenMigratesVersion2 opens a file of the schema before the lists
// index (user_version 2): the index is created, and a query on it is
// answered from it, not from a scan of the table.
func TestOpenMigratesVersion2(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kosha.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE items (pk TEXT PRIMARY KEY NOT NULL, attrs TEXT NOT NULL, ttl INTEGER) WITHOUT ROWID`,
		`CREATE INDEX items_ttl ON items (ttl) WHERE ttl IS NOT NULL`,
		`INSERT INTO items (pk, attrs) VALUES ('audit#1', '{"ix_list":{"S":"audit#0"},"ix_list_sort":{"S":"0000000000001#a"}}')`,
		`PRAGMA user_version = 2`,
	} {
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	var got []string
	for it, err := range s.Query(t.Context(), store.IndexQuery{Index: store.IndexLists, Key: "audit#0", Descending: true, Limit: 5}) {
		if err != nil {
			t.Fatalf("Query after migration: %v", err)
		}
		got = append(got, it.PK())
	}
	if len(got) != 1 || got[0] != "audit#1" {
		t.Errorf("Query after migration = %q, want [audit#1]", got)
	}
	db2, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	// The statement Query sends for a page after the first.
	e, se := `json_extract(attrs, '$.ix_list.S')`, `json_extract(attrs, '$.ix_list_sort.S')`
	rows, err := db2.QueryContext(t.Context(), `EXPLAIN QUERY PLAN SELECT pk, attrs FROM items WHERE `+e+` = ? AND `+e+
		` IS NOT NULL AND `+se+` IS NOT NULL AND `+se+` <= ? AND `+se+` <= ? AND (`+se+` < ? OR pk < ?) ORDER BY `+se+` DESC, pk DESC LIMIT 5`,
		"audit#0", "9", "5", "5", "audit#5")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	// From the cursor on (the sort key bounded), in the index's order.
	if !strings.Contains(plan.String(), "ix_lists (<expr>=? AND <expr><?)") || strings.Contains(plan.String(), "TEMP B-TREE") {
		t.Errorf("query plan does not read the lists index from the cursor in its order:\n%s", plan.String())
	}
}

// TestSortedQueryPagesPastEqualSortKeys reads an index sorted by its own
// attribute across several pages whose boundaries fall inside runs of equal
// sort keys: every item is yielded once, in (sort key, pk) order.
func TestSortedQueryPagesPastEqualSortKeys(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "kosha.db"))
	ix := store.IndexLists
	n := 2*sqlite.DefaultPageSize + 7
	var want []string
	for i := range n {
		pk := fmt.Sprintf("x#%04d", i)
		// Runs of 3 equal sort keys, in the reverse order of the pks.
		if err := s.Put(t.Context(), store.Item{store.PK: pk, ix.Attr: "p", ix.Sort: fmt.Sprintf("%04d", (n-1-i)/3)}, store.Always()); err != nil {
			t.Fatal(err)
		}
		want = append(want, pk)
	}
	slices.SortFunc(want, func(a, b string) int {
		ia, _ := strconv.Atoi(a[2:])
		ib, _ := strconv.Atoi(b[2:])
		if c := cmp.Compare((n-1-ia)/3, (n-1-ib)/3); c != 0 {
			return -c // descending by sort key
		}
		return strings.Compare(b, a) // then by pk, descending
	})
	var got []string
	for it, err := range s.Query(t.Context(), store.IndexQuery{Index: ix, Key: "p", Descending: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.PK())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Query yielded %d items, want %d in (sort key, pk) order; first differences: %v", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d got %s, want %s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}
