package ratelimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
	"github.com/kosha-platform/koshactl/internal/store"
)

func newBuckets(t *testing.T, s ratelimit.ListStore, clk clock.Clock) *ratelimit.Buckets {
	t.Helper()
	b, err := ratelimit.NewBuckets(s, clk, ratelimit.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newLimiter is the reference data plane's limiter on s, taking from the
// buckets the operator operations change.
func newLimiter(t *testing.T, s limiter.BucketStore, clk clock.Clock) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(s, limiter.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func take(t *testing.T, l *limiter.Limiter, client string) limiter.Decision {
	t.Helper()
	d, err := l.Take(t.Context(), client)
	if err != nil {
		t.Fatalf("take %s: %v", client, err)
	}
	return d
}

func apply(t *testing.T, b *ratelimit.Buckets, c ratelimit.Change) ratelimit.ChangeResult {
	t.Helper()
	res, err := b.Apply(context.Background(), c)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Op, c.Client, err)
	}
	return res
}

func TestBucketsGet(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clock.NewFake(epoch)
	b := newBuckets(t, s, clk)
	st, err := b.Get(context.Background(), "nobody")
	if err != nil || st.Exists || st.Tokens != 20 || !st.Admit {
		t.Fatalf("missing bucket: %+v, %v", st, err)
	}
	s.Set(ratelimit.Bucket{Client: "c", Tokens: 2, UpdatedAtMs: t0 - 2500, TTL: t0/1000 + 3000}.Item())
	st, err = b.Get(context.Background(), "c")
	if err != nil || !st.Exists || st.Tokens != 4.5 || st.Stored.Tokens != 2 || st.UntilFull != 15500*time.Millisecond {
		t.Fatalf("stored bucket: %+v, %v", st, err)
	}
	if _, err := b.Get(context.Background(), "a b"); !errors.Is(err, ratelimit.ErrInvalidClient) {
		t.Errorf("bad id: %v", err)
	}
	s.Set(store.Item{"pk": "rl#junk", "tokens": "x", "updated_at": t0})
	if _, err := b.Get(context.Background(), "junk"); !errors.Is(err, ratelimit.ErrMalformedBucket) {
		t.Errorf("malformed: %v", err)
	}
	s.FailGet = ratelimittest.ErrOutage
	if _, err := b.Get(context.Background(), "c"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("outage: %v", err)
	}
}

func TestBucketsList(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clock.NewFake(epoch)
	for i, tokens := range []float64{0, 19, 0.5, 7, 20} {
		s.Set(ratelimit.Bucket{Client: fmt.Sprintf("c%d", i), Tokens: tokens, UpdatedAtMs: t0 - int64(i)*100}.Item())
	}
	s.Set(store.Item{"pk": "rl#broken", "tokens": 1.0})
	s.Set(store.Item{"pk": "breaker#openai", "state": "forced_open"})
	b := newBuckets(t, s, clk)
	clients := func(r ratelimit.ListResult) string {
		var out []string
		for _, st := range r.Buckets {
			out = append(out, st.Client)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		q    ratelimit.ListQuery
		want string
	}{
		{ratelimit.ListQuery{}, "c0,c1,c2,c3,c4"},
		{ratelimit.ListQuery{Sort: ratelimit.SortTokens}, "c0,c2,c3,c1,c4"},
		{ratelimit.ListQuery{Sort: ratelimit.SortUpdated}, "c0,c1,c2,c3,c4"},
		{ratelimit.ListQuery{Sort: ratelimit.SortUpdated, Limit: 2}, "c0,c1"},
		// c0 holds 0 (refused), c2 holds 0.5 + 0.2 refill (refused).
		{ratelimit.ListQuery{Throttled: true}, "c0,c2"},
		{ratelimit.ListQuery{Throttled: true, Sort: ratelimit.SortTokens, Limit: 1}, "c0"},
	} {
		r, err := b.List(context.Background(), tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := clients(r); got != tc.want {
			t.Errorf("List(%+v) = %s, want %s", tc.q, got, tc.want)
		}
		if len(r.Malformed) != 1 || !errors.Is(r.Malformed[0], ratelimit.ErrMalformedBucket) {
			t.Errorf("malformed = %v, want the broken item reported", r.Malformed)
		}
	}
	r, _ := b.List(context.Background(), ratelimit.ListQuery{Limit: 2})
	if r.Matched != 5 || len(r.Buckets) != 2 {
		t.Errorf("matched %d, shown %d", r.Matched, len(r.Buckets))
	}
	if _, err := b.List(context.Background(), ratelimit.ListQuery{Sort: "size"}); err == nil {
		t.Error("unknown sort accepted")
	}
}

func TestBucketsReset(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clock.NewFake(epoch)
	b := newBuckets(t, s, clk)

	// Missing and full buckets: nothing to do, nothing written.
	res := apply(t, b, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if res.Changed || res.Attempts != 0 {
		t.Errorf("reset of a missing bucket: %+v", res)
	}
	s.Set(ratelimit.Bucket{Client: "c", Tokens: 15, UpdatedAtMs: t0 - 10_000}.Item())
	if res := apply(t, b, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"}); res.Changed {
		t.Errorf("reset of a bucket refilled to full: %+v", res)
	}
	if _, puts := s.Counts(); puts != 0 {
		t.Fatalf("no-op resets wrote %d times", puts)
	}

	s.Set(ratelimit.Bucket{Client: "c", Tokens: 0.5, UpdatedAtMs: t0 + 3}.Item()) // stamped ahead of our clock
	res = apply(t, b, ratelimit.Change{Op: ratelimit.OpReset, Client: "c", DryRun: true})
	if !res.Changed || res.After.Tokens != 20 || res.Before.Tokens != 0.5 {
		t.Errorf("dry run: %+v", res)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0.5 {
		t.Fatalf("dry run wrote: %+v", got)
	}
	res = apply(t, b, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	got := ratelimittest.Stored(t, s, "c")
	if !res.Changed || got.Tokens != 20 || got.UpdatedAtMs != t0+4 || got.TTL != (t0+4)/1000+1+3600 {
		t.Errorf("reset: %+v, stored %+v", res, got)
	}
	// The data plane reads it as full and admits.
	if d := take(t, newLimiter(t, s, clk), "c"); !d.Allowed || d.Remaining != 19 {
		t.Errorf("take after reset: %+v", d)
	}
}

func TestBucketsDrainAndSet(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clock.NewFake(epoch)
	b := newBuckets(t, s, clk)
	dataPlane := newLimiter(t, s, clk)

	// Drain of a missing (full) bucket creates it empty.
	res := apply(t, b, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if !res.Changed || res.Before.Exists || ratelimittest.Stored(t, s, "c").Tokens != 0 {
		t.Fatalf("drain: %+v", res)
	}
	if d := take(t, dataPlane, "c"); d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("take after drain: %+v", d)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0 || fmt.Sprint(got.Tokens) != "0" {
		t.Errorf("drain stored %v, want a plain 0", got.Tokens)
	}
	// Draining again at the same instant changes nothing.
	if res := apply(t, b, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"}); res.Changed {
		t.Errorf("second drain: %+v", res)
	}

	// Drain for 30 s: refused for 31 s (30 s back to zero, 1 s to a token).
	clk.Advance(2 * time.Second)
	res = apply(t, b, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c", HoldFor: 30 * time.Second})
	if ratelimittest.Stored(t, s, "c").Tokens != -30 || res.After.RetryAfter != 31*time.Second {
		t.Fatalf("timed drain: %+v", res)
	}
	clk.Advance(30 * time.Second)
	if d := take(t, dataPlane, "c"); d.Allowed {
		t.Errorf("admitted 30 s into a 30 s drain: %+v", d)
	}
	clk.Advance(time.Second)
	if d := take(t, dataPlane, "c"); !d.Allowed {
		t.Errorf("refused 31 s after a 30 s drain: %+v", d)
	}

	// Set.
	res = apply(t, b, ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 7.5})
	if !res.Changed || ratelimittest.Stored(t, s, "c").Tokens != 7.5 {
		t.Errorf("set: %+v", res)
	}
	if res := apply(t, b, ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 7.5}); res.Changed {
		t.Errorf("set to the current value wrote: %+v", res)
	}
	for _, bad := range []ratelimit.Change{
		{Op: ratelimit.OpSet, Client: "c", Tokens: 21},
		{Op: ratelimit.OpSet, Client: "c", Tokens: -1},
		{Op: ratelimit.OpDrain, Client: "c", HoldFor: 2 * time.Hour},
	} {
		if _, err := b.Apply(context.Background(), bad); !errors.Is(err, ratelimit.ErrInvalidTokens) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := b.Apply(context.Background(), ratelimit.Change{Op: ratelimit.OpReset, Client: "rl#c"}); !errors.Is(err, ratelimit.ErrInvalidClient) {
		t.Errorf("bad client: %v", err)
	}
}

// A malformed item (on which the data plane fails open) is replaced by any
// change, conditional on it being unchanged, and the audit says what it was.
func TestBucketsRepairMalformed(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clock.NewFake(epoch)
	b := newBuckets(t, s, clk)
	for _, bad := range []store.Item{
		{"pk": "rl#c", "tokens": "lots", "updated_at": t0 + 5},
		{"pk": "rl#c", "tokens": "lots"},
		{"pk": "rl#c", "note": "hand-written"},
	} {
		s.Set(bad)
		if _, err := b.Get(context.Background(), "c"); !errors.Is(err, ratelimit.ErrMalformedBucket) {
			t.Fatalf("get %v: %v", bad, err)
		}
		dry := apply(t, b, ratelimit.Change{Op: ratelimit.OpReset, Client: "c", DryRun: true})
		if !dry.Changed || dry.Malformed == nil || !dry.Before.Exists {
			t.Errorf("dry reset of %v: %+v", bad, dry)
		}
		res, rec, err := b.ApplyAudited(context.Background(), recorder{}, "op", "", ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
		if err != nil || !res.Changed || !errors.Is(res.Malformed, ratelimit.ErrMalformedBucket) {
			t.Fatalf("reset of %v: %+v, %v", bad, res, err)
		}
		got := ratelimittest.Stored(t, s, "c")
		want := t0
		if _, ok := bad["updated_at"]; ok {
			want = t0 + 6
		}
		if got.Tokens != 20 || got.UpdatedAtMs != want {
			t.Errorf("after repairing %v: %+v", bad, got)
		}
		if !strings.Contains(string(rec.Before), `"malformed":`) {
			t.Errorf("audit before = %s", rec.Before)
		}
	}
	// Someone else rewrote the broken item meanwhile: the repair is refused.
	s.Set(store.Item{"pk": "rl#c", "tokens": "lots"})
	race := &ratelimittest.Interfering{MemStore: s, OnGet: func() { s.Set(store.Item{"pk": "rl#c", "tokens": "more"}) }}
	res, err := newBuckets(t, race, clock.NewFake(epoch)).Apply(context.Background(), ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if err != nil || res.Attempts != 2 {
		t.Fatalf("drain: %+v, %v; want the first write refused", res, err)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0 {
		t.Errorf("the retry after the race should have replaced the new item: %+v", got)
	}
}

// recorder is an audit.Appender that returns the record it was asked to write.
type recorder struct{}

func (recorder) Append(_ context.Context, e audit.Entry) (audit.Record, error) {
	before, _ := json.Marshal(e.Before)
	return audit.Record{ID: "x", Action: e.Action, Before: before}, nil
}

// busyStore refuses the first n conditional writes as if a data-plane take
// had landed between read and write, changing the bucket each time.
type busyStore struct {
	*ratelimittest.MemStore
	n int
}

func (b *busyStore) Put(ctx context.Context, it store.Item, cond store.Condition) error {
	if b.n > 0 {
		b.n--
		cur, _ := b.Get(ctx, it.PK())
		bk, _ := ratelimit.BucketFromItem(cur)
		bk.Tokens--
		bk.UpdatedAtMs++
		b.Set(bk.Item())
	}
	return b.MemStore.Put(ctx, it, cond)
}

func TestBucketsRetryAndBusy(t *testing.T) {
	m := ratelimittest.NewMemStore()
	m.Set(ratelimit.Bucket{Client: "c", Tokens: 10, UpdatedAtMs: t0}.Item())
	s := &busyStore{MemStore: m, n: 2}
	b := newBuckets(t, s, clock.NewFake(epoch))
	res := apply(t, b, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if res.Attempts != 3 || res.Before.Stored.Tokens != 8 || res.Before.Stored.UpdatedAtMs != t0+2 {
		t.Errorf("after two races: %+v (before must be the state actually replaced)", res)
	}
	if got := ratelimittest.Stored(t, m, "c"); got.Tokens != 0 || got.UpdatedAtMs != t0+3 {
		t.Errorf("stored %+v", got)
	}
	s.n = ratelimit.MutationAttempts
	_, err := b.Apply(context.Background(), ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if !errors.Is(err, ratelimit.ErrBusy) || !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("always raced: %v", err)
	}
}

type failingAuditor struct{}

func (failingAuditor) Append(context.Context, audit.Entry) (audit.Record, error) {
	return audit.Record{}, fmt.Errorf("%w: disk full", audit.ErrAuditWrite)
}

func TestBucketsApplyAudited(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clock.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := audit.NewLog(auditStore{s}, clk, "test")
	ctx := context.Background()

	res, rec, err := b.ApplyAudited(ctx, log, "alice@laptop", "drill", ratelimit.Change{Op: ratelimit.OpDrain, Client: "c", DryRun: true})
	if err != nil || !res.Changed || rec.ID == "" {
		t.Fatalf("drain: %+v %+v %v", res, rec, err)
	}
	if ratelimittest.Stored(t, s, "c").Tokens != 0 {
		t.Error("audited apply honored DryRun; it must always write")
	}
	if rec.Action != "ratelimit.drain" || rec.Subject != "rl#c" || rec.Actor != "alice@laptop" || rec.Reason != "drill" {
		t.Errorf("record: %+v", rec)
	}
	var before, after map[string]any
	if json.Unmarshal(rec.Before, &before) != nil || json.Unmarshal(rec.After, &after) != nil {
		t.Fatalf("before/after not JSON: %s %s", rec.Before, rec.After)
	}
	if before["exists"] != false || before["refilled_tokens"] != 20.0 || after["tokens"] != 0.0 || after["updated_at"] != float64(t0) {
		t.Errorf("before %v after %v", before, after)
	}

	// A reset of a full bucket records nothing.
	clk.Advance(time.Minute)
	_, rec, err = b.ApplyAudited(ctx, log, "alice@laptop", "", ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if err != nil || rec.ID != "" {
		t.Errorf("no-op reset recorded: %+v %v", rec, err)
	}
	recs, err := log.List(ctx, audit.Query{})
	if err != nil || len(recs.Records) != 1 {
		t.Errorf("audit records: %v %v", recs, err)
	}

	// Written but not audited: the caller is told both.
	_, _, err = b.ApplyAudited(ctx, failingAuditor{}, "a", "", ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 3})
	if !errors.Is(err, audit.ErrAuditWrite) || !strings.Contains(err.Error(), "was changed") || ratelimittest.Stored(t, s, "c").Tokens != 3 {
		t.Errorf("audit failure: %v", err)
	}
}

// auditStore gives the ratelimittest.MemStore the Put and Scan the audit log needs.
type auditStore struct{ *ratelimittest.MemStore }

func TestOpNames(t *testing.T) {
	for op, want := range map[ratelimit.Op][2]string{
		ratelimit.OpReset: {"reset", "ratelimit.reset"}, ratelimit.OpDrain: {"drain", "ratelimit.drain"}, ratelimit.OpSet: {"set", "ratelimit.set"},
	} {
		if op.String() != want[0] || op.Action() != want[1] {
			t.Errorf("%v: %s %s", op, op.String(), op.Action())
		}
	}
}
