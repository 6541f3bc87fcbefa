package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// One moto server serves the package, started on first use so the pure tests
// do not need it.
var (
	motoOnce     sync.Once
	motoEndpoint string
	motoStop     = func() {}
	motoErr      error
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoStop()
	os.Exit(code)
}

func motoURL(tb testing.TB) string {
	tb.Helper()
	motoOnce.Do(func() {
		motoEndpoint, motoStop, motoErr = moto.StartMain()
	})
	if motoErr != nil {
		tb.Fatal(motoErr)
	}
	return motoEndpoint
}

// backends opens a fresh, empty store of each kind for one test.
var backends = map[string]func(t *testing.T) store.Store{
	"sqlite": func(t *testing.T) store.Store {
		return sqlitetest.NewStore(t)
	},
	"dynamodb": func(t *testing.T) store.Store {
		return dynamotest.NewStore(t, motoURL(t))
	},
}

// TestConformance runs the operator operations on both real stores, with the
// reference limiter taking from the same buckets.
func TestConformance(t *testing.T) {
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Run("operator-changes", func(t *testing.T) { conformChanges(t, open(t)) })
			t.Run("list", func(t *testing.T) { conformList(t, open(t)) })
		})
	}
}

func conformChanges(t *testing.T, s store.Store) {
	clk := clocktest.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := newLog(s, clk)
	l := newLimiter(t, s, clk)
	apply(t, b, log, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if d := take(t, l, "c"); d.Allowed {
		t.Fatalf("admitted after drain: %+v", d)
	}
	clk.Advance(5 * time.Second)
	apply(t, b, log, ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 2.25})
	if st, _ := b.Get(context.Background(), "c"); st.Tokens != 2.25 || st.Stored.UpdatedAtMs != t0+5000 {
		t.Errorf("after set: %+v", st)
	}
	take(t, l, "c")
	res := apply(t, b, log, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if !res.Changed || res.Before.Stored.Tokens != 1.25 {
		t.Errorf("reset: %+v", res)
	}
	if st, _ := b.Get(context.Background(), "c"); !st.Full() || st.Stored.UpdatedAtMs != t0+5002 {
		t.Errorf("after reset: %+v", st)
	}
	// A stale conditional write is refused by the store itself.
	err := s.Put(context.Background(), ratelimit.Bucket{Client: "c", Tokens: 0, UpdatedAtMs: t0 + 9000}.Item(),
		store.IfEquals(ratelimit.AttrUpdatedAt, t0+5000))
	if err == nil {
		t.Error("write conditioned on a superseded updated_at was accepted")
	}
	// Racing operator changes against a busy client still end in the
	// requested state.
	busy := &storeBusy{Store: s, n: 2}
	b2 := newBuckets(t, busy, clk)
	res = apply(t, b2, log, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if res.Attempts != 3 {
		t.Errorf("attempts = %d", res.Attempts)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0 || got.WriteID != res.WriteID {
		t.Errorf("stored %+v", got)
	}
	// Each change recorded once, the drain by the change that landed.
	recs := records(t, log, "rl#c")
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4 (drain, set, reset, drain)", len(recs))
	}
	var drains int
	for _, r := range recs {
		if r.Action == ratelimit.ActionDrain && r.Change == res.WriteID {
			drains++
		}
	}
	if drains != 1 {
		t.Errorf("records %+v: want one of the last drain's change %s", recs, res.WriteID)
	}
}

// storeBusy lands a data-plane take on every bucket of each of the first n
// operator changes, between its read and its write.
type storeBusy struct {
	store.Store
	n int
}

func (b *storeBusy) Transact(ctx context.Context, c store.Change) error {
	if b.n > 0 {
		b.n--
		l, _ := limiter.New(b.Store, limiter.Config{Clock: clocktest.NewFake(epoch.Add(time.Minute))})
		for _, op := range c.Ops {
			if client, ok := strings.CutPrefix(op.PK(), ratelimit.KeyPrefix); ok {
				if _, err := l.Take(ctx, client); err != nil {
					return err
				}
			}
		}
	}
	return b.Store.Transact(ctx, c)
}

func conformList(t *testing.T, s store.Store) {
	clk := clocktest.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := newLog(s, clk)
	for i := range 30 {
		c := ratelimit.Change{Op: ratelimit.OpSet, Client: fmt.Sprintf("client-%02d", i), Tokens: float64(i % 10)}
		if c.Tokens == 0 {
			c.Op = ratelimit.OpDrain
		}
		apply(t, b, log, c)
	}
	if err := s.Put(context.Background(), store.Item{"pk": "breaker#openai", "state": "forced_open"}, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	var progressed int
	var mu sync.Mutex
	r, err := b.List(context.Background(), ratelimit.ListQuery{Throttled: true, Sort: ratelimit.SortTokens, Segments: 3,
		Progress: func(n int) { mu.Lock(); progressed = max(progressed, n); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Buckets) != 3 || r.Buckets[0].Client != "client-00" || r.Buckets[2].Client != "client-20" {
		t.Errorf("throttled = %+v", r.Buckets)
	}
	if progressed < 30 {
		t.Errorf("progress reported %d items examined, want at least 30", progressed)
	}
	r, err = b.List(context.Background(), ratelimit.ListQuery{Sort: ratelimit.SortClient, Limit: 5, Segments: 4})
	if err != nil || r.Matched != 30 || len(r.Buckets) != 5 || r.Buckets[4].Client != "client-04" {
		t.Errorf("list: %+v, %v", r, err)
	}
}
