package ratelimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

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

// newLog is an audit log on s, the store the buckets are on.
func newLog(s interface {
	Get(ctx context.Context, pk string) (store.Item, error)
	Put(ctx context.Context, item store.Item, cond store.Condition) error
	Transact(ctx context.Context, c store.Change) error
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
}, clk clock.Clock) *audit.Log {
	return audit.NewLog(s, clk, "test")
}

// apply makes c and records it on log.
func apply(t *testing.T, b buckets, log audit.Appender, c ratelimit.Change) applied {
	t.Helper()
	res, _, err := b.WithLog(log).ApplyAudited(context.Background(), "tester", "", c)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Op, c.Client, err)
	}
	return res
}

// plan is c's dry run.
func plan(t *testing.T, b buckets, c ratelimit.Change) applied {
	t.Helper()
	res, err := b.Plan(context.Background(), c)
	if err != nil {
		t.Fatalf("plan %s %s: %v", c.Op, c.Client, err)
	}
	return res
}

// records lists log's records on subject, read with a scan.
func records(t *testing.T, log *audit.Log, subject string) []audit.Record {
	t.Helper()
	l, err := log.List(context.Background(), audit.Query{Subject: subject, Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	return l.Records
}

func TestBucketsGet(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clocktest.NewFake(epoch)
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
	clk := clocktest.NewFake(epoch)
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
	clk := clocktest.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := newLog(s, clk)

	// Missing and full buckets: nothing to do, nothing written or recorded.
	res := apply(t, b, log, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if res.Changed || res.Attempts != 0 {
		t.Errorf("reset of a missing bucket: %+v", res)
	}
	s.Set(ratelimit.Bucket{Client: "c", Tokens: 15, UpdatedAtMs: t0 - 10_000}.Item())
	if res := apply(t, b, log, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"}); res.Changed {
		t.Errorf("reset of a bucket refilled to full: %+v", res)
	}
	if _, writes := s.Counts(); writes != 0 {
		t.Fatalf("no-op resets wrote %d times", writes)
	}
	if got := records(t, log, "rl#c"); len(got) != 0 {
		t.Fatalf("no-op resets recorded %+v", got)
	}

	s.Set(ratelimit.Bucket{Client: "c", Tokens: 0.5, UpdatedAtMs: t0 + 3}.Item()) // stamped ahead of our clock
	res = plan(t, b, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if !res.Changed || res.After.Tokens != 20 || res.Before.Tokens != 0.5 || res.Attempts != 0 {
		t.Errorf("plan: %+v", res)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0.5 {
		t.Fatalf("plan wrote: %+v", got)
	}
	res = apply(t, b, log, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	got := ratelimittest.Stored(t, s, "c")
	if !res.Changed || got.Tokens != 20 || got.UpdatedAtMs != t0+4 || got.TTL != (t0+4)/1000+1+3600 || got.WriteID != res.WriteID {
		t.Errorf("reset: %+v, stored %+v", res, got)
	}
	// The data plane reads it as full and admits.
	if d := take(t, newLimiter(t, s, clk), "c"); !d.Allowed || d.Remaining != 19 {
		t.Errorf("take after reset: %+v", d)
	}
}

func TestBucketsDrainAndSet(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clocktest.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := newLog(s, clk)
	dataPlane := newLimiter(t, s, clk)

	// Drain of a missing (full) bucket creates it empty.
	res := apply(t, b, log, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
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
	if res := apply(t, b, log, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"}); res.Changed {
		t.Errorf("second drain: %+v", res)
	}

	// Drain for 30 s: refused for 31 s (30 s back to zero, 1 s to a token).
	clk.Advance(2 * time.Second)
	res = apply(t, b, log, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c", HoldFor: 30 * time.Second})
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
	res = apply(t, b, log, ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 7.5})
	if !res.Changed || ratelimittest.Stored(t, s, "c").Tokens != 7.5 {
		t.Errorf("set: %+v", res)
	}
	if res := apply(t, b, log, ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 7.5}); res.Changed {
		t.Errorf("set to the current value wrote: %+v", res)
	}
	// Three changes made, three recorded; the no-ops recorded nothing.
	if got := records(t, log, "rl#c"); len(got) != 3 {
		t.Errorf("%d records, want 3: %+v", len(got), got)
	}
	for _, bad := range []ratelimit.Change{
		{Op: ratelimit.OpSet, Client: "c", Tokens: 21},
		{Op: ratelimit.OpSet, Client: "c", Tokens: -1},
		{Op: ratelimit.OpDrain, Client: "c", HoldFor: 2 * time.Hour},
	} {
		if _, _, err := b.WithLog(log).ApplyAudited(context.Background(), "tester", "", bad); !errors.Is(err, ratelimit.ErrInvalidTokens) {
			t.Errorf("%+v: %v", bad, err)
		}
		if _, err := b.Plan(context.Background(), bad); !errors.Is(err, ratelimit.ErrInvalidTokens) {
			t.Errorf("plan %+v: %v", bad, err)
		}
	}
	if _, _, err := b.WithLog(log).ApplyAudited(context.Background(), "tester", "", ratelimit.Change{Op: ratelimit.OpReset, Client: "rl#c"}); !errors.Is(err, ratelimit.ErrInvalidClient) {
		t.Errorf("bad client: %v", err)
	}
}

// A malformed item (on which the data plane fails open) is replaced by any
// change, conditional on it being unchanged, and the audit says what it was.
func TestBucketsRepairMalformed(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clocktest.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := newLog(s, clk)
	for _, bad := range []store.Item{
		{"pk": "rl#c", "tokens": "lots", "updated_at": t0 + 5},
		{"pk": "rl#c", "tokens": "lots"},
		{"pk": "rl#c", "note": "hand-written"},
	} {
		s.Set(bad)
		if _, err := b.Get(context.Background(), "c"); !errors.Is(err, ratelimit.ErrMalformedBucket) {
			t.Fatalf("get %v: %v", bad, err)
		}
		dry := plan(t, b, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
		if !dry.Changed || dry.Malformed == nil || !dry.Before.Exists {
			t.Errorf("plan reset of %v: %+v", bad, dry)
		}
		res, rec, err := b.WithLog(log).ApplyAudited(context.Background(), "op", "", ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
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
	// Someone else rewrote the broken item meanwhile: the change is refused,
	// and rebuilt from a re-read as a new change, which alone is recorded.
	s.Set(store.Item{"pk": "rl#c", "tokens": "lots"})
	race := &ratelimittest.Interfering{MemStore: s, OnGet: func() { s.Set(store.Item{"pk": "rl#c", "tokens": "more"}) }}
	res, rec, err := newBuckets(t, race, clk).WithLog(log).ApplyAudited(context.Background(), "op", "", ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if err != nil || res.Attempts != 2 {
		t.Fatalf("drain: %+v, %v; want the first change refused", res, err)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0 || got.WriteID != res.WriteID {
		t.Errorf("the retry after the race should have replaced the new item: %+v", got)
	}
	if !strings.Contains(string(rec.Before), `more`) {
		t.Errorf("the record's before is not the item the retry replaced: %s", rec.Before)
	}
	if got := records(t, log, "rl#c"); len(got) != 4 {
		t.Errorf("%d records, want 4 (the three repairs and the drain that landed)", len(got))
	}
}

// busyStore refuses the first n changes as if a data-plane take had landed
// on each of their buckets between read and write.
type busyStore struct {
	*ratelimittest.MemStore
	n int
}

func (b *busyStore) Transact(ctx context.Context, c store.Change) error {
	if b.n > 0 {
		b.n--
		for _, op := range c.Ops {
			if !strings.HasPrefix(op.PK(), ratelimit.KeyPrefix) {
				continue
			}
			cur, _ := b.Get(ctx, op.PK())
			bk, _ := ratelimit.BucketFromItem(cur)
			bk.Tokens--
			bk.UpdatedAtMs++
			b.Set(bk.Item())
		}
	}
	return b.MemStore.Transact(ctx, c)
}

// A refused change is rebuilt from a re-read, under a new token with a new
// record: only the change that lands is recorded, once.
func TestBucketsRetryAndBusy(t *testing.T) {
	m := ratelimittest.NewMemStore()
	m.Set(ratelimit.Bucket{Client: "c", Tokens: 10, UpdatedAtMs: t0}.Item())
	s := &busyStore{MemStore: m, n: 2}
	clk := clocktest.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := newLog(m, clk)
	res := apply(t, b, log, ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if res.Attempts != 3 || res.Before.Stored.Tokens != 8 || res.Before.Stored.UpdatedAtMs != t0+2 {
		t.Errorf("after two races: %+v (before must be the state actually replaced)", res)
	}
	got := ratelimittest.Stored(t, m, "c")
	if got.Tokens != 0 || got.UpdatedAtMs != t0+3 || got.WriteID != res.WriteID {
		t.Errorf("stored %+v", got)
	}
	recs := records(t, log, "rl#c")
	if len(recs) != 1 || recs[0].Change != res.WriteID || !strings.Contains(string(recs[0].Before), `"tokens":8`) {
		t.Fatalf("records %+v, want one, of the change that landed (%s), before = 8 tokens", recs, res.WriteID)
	}
	s.n = ratelimit.MutationAttempts
	_, _, err := b.WithLog(log).ApplyAudited(context.Background(), "tester", "", ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if !errors.Is(err, ratelimit.ErrBusy) || !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("always raced: %v", err)
	}
	if got := records(t, log, "rl#c"); len(got) != 1 {
		t.Errorf("%d records after a reset that never landed, want 1", len(got))
	}
}

// failingStager is an audit.Appender that cannot make a record.
type failingStager struct{}

func (failingStager) Append(context.Context, audit.Entry) (audit.Record, error) {
	return audit.Record{}, fmt.Errorf("%w: disk full", audit.ErrAuditWrite)
}

func (failingStager) Stage(context.Context, audit.Entry, string, int) (audit.Record, store.Op, error) {
	return audit.Record{}, store.Op{}, fmt.Errorf("%w: cannot encode", audit.ErrAuditWrite)
}

func TestBucketsApplyAudited(t *testing.T) {
	s := ratelimittest.NewMemStore()
	clk := clocktest.NewFake(epoch)
	b := newBuckets(t, s, clk)
	log := newLog(s, clk)
	ctx := context.Background()

	res, rec, err := b.WithLog(log).ApplyAudited(ctx, "alice@laptop", "drill", ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if err != nil || !res.Changed || rec.ID == "" || res.Attempts != 1 || res.Confirmed {
		t.Fatalf("drain: %+v %+v %v", res, rec, err)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0 || got.WriteID != res.WriteID || rec.Change != res.WriteID {
		t.Errorf("stored %+v, record of change %q; want both of change %s", got, rec.Change, res.WriteID)
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
	if recs := records(t, log, "rl#c"); len(recs) != 1 || recs[0].ID != rec.ID {
		t.Errorf("records %+v, want exactly the drain's", recs)
	}

	// A reset of a full bucket records nothing.
	clk.Advance(time.Minute)
	_, rec, err = b.WithLog(log).ApplyAudited(ctx, "alice@laptop", "", ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if err != nil || rec.ID != "" {
		t.Errorf("no-op reset recorded: %+v %v", rec, err)
	}

	// A record that cannot be made: nothing is written, and the error is
	// not a change without its record.
	_, _, err = b.WithLog(failingStager{}).ApplyAudited(ctx, "a", "", ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 3})
	if err == nil || errors.Is(err, audit.ErrAuditWrite) || ratelimittest.Stored(t, s, "c").Tokens != 0 {
		t.Errorf("record failure: %v, stored %+v; want nothing written", err, ratelimittest.Stored(t, s, "c"))
	}

	// A store that refuses the write: nothing changed, nothing recorded.
	s.FailPut = ratelimittest.ErrOutage
	res, rec, err = b.WithLog(log).ApplyAudited(ctx, "a", "", ratelimit.Change{Op: ratelimit.OpSet, Client: "c", Tokens: 3})
	s.FailPut = nil
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) || rec.ID != "" || res.Confirmed {
		t.Errorf("store outage: %+v, %+v, %v", res, rec, err)
	}
	if got := ratelimittest.Stored(t, s, "c"); got.Tokens != 0 {
		t.Errorf("stored %+v after a refused write", got)
	}
	if recs := records(t, log, "rl#c"); len(recs) != 1 {
		t.Errorf("%d records after a failed write, want 1", len(recs))
	}
}

// lostAnswer applies the first lose changes and then loses their answers
// (the store wrote them; the caller hears an outage); with failReads, reads
// fail from then on.
type lostAnswer struct {
	*ratelimittest.MemStore
	lose      int
	failReads bool
	lost      bool
	cancel    context.CancelFunc // when set, the loss is the caller's interrupt
}

func (l *lostAnswer) Transact(ctx context.Context, c store.Change) error {
	err := l.MemStore.Transact(ctx, c)
	if err != nil || l.lose == 0 {
		return err
	}
	l.lose--
	l.lost = true
	if l.cancel != nil {
		l.cancel()
		return fmt.Errorf("change %s: %w", c.Token, ctx.Err())
	}
	return ratelimittest.ErrOutage
}

func (l *lostAnswer) Get(ctx context.Context, pk string) (store.Item, error) {
	if l.lost && l.failReads {
		return nil, ratelimittest.ErrOutage
	}
	return l.MemStore.Get(ctx, pk)
}

// A change whose answer is lost is settled by store.Apply: confirmed when
// it landed, its record written with it, once; unknown when the store
// cannot be read to tell.
func TestBucketsLostAnswer(t *testing.T) {
	clk := clocktest.NewFake(epoch)
	drain := ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"}
	for _, tc := range []struct {
		name      string
		interrupt bool
	}{{"outage", false}, {"interrupt", true}} {
		t.Run(tc.name, func(t *testing.T) {
			m := ratelimittest.NewMemStore()
			s := &lostAnswer{MemStore: m, lose: 1}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.interrupt {
				s.cancel = cancel
			}
			log := newLog(m, clk)
			res, rec, err := newBuckets(t, s, clk).WithLog(log).ApplyAudited(ctx, "me", "incident", drain)
			if err != nil || !res.Confirmed || rec.ID == "" {
				t.Fatalf("lost answer: %+v, %v; want confirmed", res, err)
			}
			if got := records(t, log, "rl#c"); len(got) != 1 || got[0].Change != res.WriteID || ratelimittest.Stored(t, m, "c").WriteID != res.WriteID {
				t.Fatalf("records %+v; want exactly one, of change %s", got, res.WriteID)
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		m := ratelimittest.NewMemStore()
		s := &lostAnswer{MemStore: m, lose: 1, failReads: true}
		res, rec, err := newBuckets(t, s, clk).WithLog(newLog(m, clk)).ApplyAudited(context.Background(), "me", "", drain)
		if !errors.Is(err, store.ErrOutcomeUnknown) || errors.Is(err, audit.ErrAuditWrite) || res.Confirmed || rec.ID != "" {
			t.Fatalf("lost answer, store unreadable: %+v, %v; want the outcome unknown", res, err)
		}
	})
}

// Interrupted before the change was sent: nothing written, nothing
// recorded, and the error is the cancellation.
func TestBucketsInterruptedBeforeSending(t *testing.T) {
	m := ratelimittest.NewMemStore()
	clk := clocktest.NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &ratelimittest.Interfering{MemStore: m, OnGet: cancel}
	log := newLog(m, clk)
	_, _, err := newBuckets(t, s, clk).WithLog(log).ApplyAudited(ctx, "me", "", ratelimit.Change{Op: ratelimit.OpDrain, Client: "c"})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, store.ErrNotSent) {
		t.Fatalf("interrupted before sending: %v", err)
	}
	if it := m.Item("rl#c"); len(it) != 0 {
		t.Errorf("bucket written: %v", it)
	}
	if got := records(t, log, "rl#c"); len(got) != 0 {
		t.Errorf("records: %+v", got)
	}
}

// Claims an older koshactl wrote (audit#claim#<token>), planted or forged,
// change nothing: a change writes its one record, claims are neither read
// nor listed, and they are left as they were.
func TestPlantedClaimsChangeNothing(t *testing.T) {
	m := ratelimittest.NewMemStore()
	clk := clocktest.NewFake(epoch)
	log := newLog(m, clk)
	token := strings.Repeat("ab", 16)
	claims := []store.Item{
		{"pk": "audit#claim#" + token, "subject": "rl#c", "actor": "mallory", "action": ratelimit.ActionReset, "reason": "forged", store.WriteIDAttr: token},
		{"pk": "audit#claim#" + strings.Repeat("0", 32), "subject": "rl#c"},
	}
	for _, c := range claims {
		m.Set(c)
	}
	// A bucket forged to carry the first claim's token.
	m.Set(store.Item{"pk": "rl#c", "tokens": 0.0, "updated_at": t0, "ttl": t0/1000 + 3600, store.WriteIDAttr: token})
	res := apply(t, newBuckets(t, m, clk), log, ratelimit.Change{Op: ratelimit.OpReset, Client: "c"})
	if !res.Changed || res.Confirmed || res.WriteID == token {
		t.Fatalf("reset: %+v", res)
	}
	recs := records(t, log, "rl#c")
	if len(recs) != 1 || recs[0].Actor != "tester" || recs[0].Change != res.WriteID {
		t.Fatalf("records %+v, want exactly the reset's", recs)
	}
	for _, c := range claims {
		if got := m.Item(c.PK()); !reflect.DeepEqual(got, store.Normalize(c)) {
			t.Errorf("claim %s became %v", c.PK(), got)
		}
	}
}

func TestOpNames(t *testing.T) {
	for op, want := range map[ratelimit.Op][2]string{
		ratelimit.OpReset: {"reset", "ratelimit.reset"}, ratelimit.OpDrain: {"drain", "ratelimit.drain"}, ratelimit.OpSet: {"set", "ratelimit.set"},
	} {
		if op.String() != want[0] || op.Action() != want[1] {
			t.Errorf("%v: %s %s", op, op.String(), op.Action())
		}
	}
}

// scanCount counts the items a store's scans have yielded.
type scanCount struct {
	ratelimit.ListStore
	scanned int
}

func (s *scanCount) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		for it, err := range s.ListStore.Scan(ctx, q) {
			s.scanned++
			if !yield(it, err) {
				return
			}
		}
	}
}

// ScansInKeyOrder is the wrapped store's.
func (s *scanCount) ScansInKeyOrder() bool { return store.ScansInKeyOrder(s.ListStore) }

// Each passes the buckets in every order, at most the limit of them, the
// same whether the store scans in key order (the embedded store) or not;
// in client order on the embedded store it passes the first bucket before
// the scan has read past its first page.
func TestBucketsEachOrdersAndLimits(t *testing.T) {
	t.Parallel()
	lite, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lite.Close() })
	mem := ratelimittest.NewMemStore()
	const n = 1200
	for i := range n {
		bk := ratelimit.Bucket{Client: fmt.Sprintf("c%04d", (i*7919)%n), Tokens: float64(i % 17), UpdatedAtMs: t0 - int64(i%23)*1000}
		mem.Set(bk.Item())
		if err := lite.Put(context.Background(), bk.Item(), store.Always()); err != nil {
			t.Fatal(err)
		}
	}
	var want map[string][]string
	for name, base := range map[string]ratelimit.ListStore{"memory": mem, "sqlite": lite} {
		s := &scanCount{ListStore: base}
		b := newBuckets(t, s, clocktest.NewFake(epoch))
		got := map[string][]string{}
		for _, sort := range ratelimit.SortOrders {
			for _, limit := range []int{0, 1, 10, n + 5} {
				var clients []string
				s.scanned = 0
				firstAt := -1
				stats, err := b.Each(context.Background(), ratelimit.ListQuery{Sort: sort, Limit: limit}, func(st ratelimit.Status) bool {
					if firstAt < 0 {
						firstAt = s.scanned
					}
					clients = append(clients, st.Client)
					return true
				})
				if err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprintf("%s/%d", sort, limit)
				got[key] = clients
				if stats.Matched != n || (limit > 0 && len(clients) != min(limit, n)) || (limit == 0 && len(clients) != n) {
					t.Errorf("%s %s: %d passed of %d matched", name, key, len(clients), stats.Matched)
				}
				if name == "sqlite" && sort == ratelimit.SortClient && firstAt > sqlite.DefaultPageSize {
					t.Errorf("%s %s: the first bucket was passed after %d items were scanned, want within the first page", name, key, firstAt)
				}
			}
		}
		if want == nil {
			want = got
			// The reference: the whole listing sorted, cut at the limit.
			for _, sort := range ratelimit.SortOrders {
				for _, limit := range []int{1, 10} {
					if all := got[fmt.Sprintf("%s/0", sort)]; !slices.Equal(got[fmt.Sprintf("%s/%d", sort, limit)], all[:limit]) {
						t.Errorf("%s %s limit %d: %v, want the first of %v", name, sort, limit, got[fmt.Sprintf("%s/%d", sort, limit)], all[:limit])
					}
				}
			}
			continue
		}
		for k, v := range got {
			if !slices.Equal(v, want[k]) {
				t.Errorf("%s %s differs from the other store's", name, k)
			}
		}
	}
}
