package limiter_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	v "github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// bucketVectorFile is docs/contracts/vectors/rate-limit-bucket.json.
type bucketVectorFile struct {
	Description      string         `json:"description"`
	Contract         string         `json:"contract"`
	MaxCASRetries    int            `json:"max_cas_retries"`
	IdleTTLSeconds   int64          `json:"idle_ttl_seconds"`
	OnConditionFails string         `json:"on_condition_failed"`
	Cases            []bucketVector `json:"cases"`
}

type bucketVector struct {
	Name            string  `json:"name"`
	Client          string  `json:"client"`
	Capacity        float64 `json:"capacity"`
	RefillPerSecond float64 `json:"refill_per_second"`
	// Item is the bucket as read (nil: no item, a full bucket).
	Item  v.Item `json:"item"`
	NowMs int64  `json:"now_ms"`
	// Status is what `koshactl ratelimit get` reads at now (nil for a
	// malformed item).
	Status *bucketStatus `json:"status"`
	// Take is the race-free take (internal/dataplane/limiter); LLD the
	// seed's pseudocode as written.
	Take takeResult `json:"take"`
	LLD  takeResult `json:"lld"`
	Why  string     `json:"why"`
}

type bucketStatus struct {
	Tokens       float64 `json:"tokens"`
	Admit        bool    `json:"admit"`
	RetryAfterMs int64   `json:"retry_after_ms"`
	AheadMs      int64   `json:"ahead_of_clock_ms"`
}

type takeResult struct {
	// Outcome: admitted, denied or fail_open_error.
	Outcome  string `json:"outcome"`
	Allowed  bool   `json:"allowed"`
	FailOpen bool   `json:"fail_open"`
	// Remaining: tokens left (admitted) or the refilled level (denied);
	// null when the take failed open.
	Remaining *float64 `json:"remaining"`
	// RetryAfterMs and RetryAfterHeader (whole seconds, rounded up) for a
	// denied take; null otherwise.
	RetryAfterMs     *int64 `json:"retry_after_ms"`
	RetryAfterHeader *int64 `json:"retry_after_header"`
	// Write is the conditional write to send; null when nothing is written.
	Write *write `json:"write"`
}

type write struct {
	Item      v.Item    `json:"item"`
	Condition condition `json:"condition"`
}

// condition is a DynamoDB ConditionExpression with its values.
type condition struct {
	Expression string `json:"expression"`
	Values     v.Item `json:"values,omitempty"`
}

// recorder answers one Get with the vector's item and records the Put a
// take sends (which succeeds).
type recorder struct {
	item store.Item
	puts []write
	t    *testing.T
}

func (r *recorder) Get(context.Context, string) (store.Item, error) {
	if r.item == nil {
		return nil, store.ErrNotFound
	}
	return r.item.Clone(), nil
}

func (r *recorder) Put(_ context.Context, it store.Item, cond store.Condition) error {
	if err := it.Validate(); err != nil {
		r.t.Fatal(err)
	}
	ddb, err := v.FromStore(it)
	if err != nil {
		r.t.Fatal(err)
	}
	w := write{Item: ddb}
	switch attr, val, ok := cond.Match(); {
	case cond.RequiresAbsent():
		w.Condition.Expression = "attribute_not_exists(pk)"
	case ok:
		n, _ := store.FormatNumber(val)
		w.Condition.Expression = attr + " = :seen"
		w.Condition.Values = v.Item{":seen": v.N(n)}
	default:
		r.t.Fatalf("unexpected condition %v", cond)
	}
	r.puts = append(r.puts, w)
	return nil
}

const (
	vecT0     int64 = 1795978800000 // 2026-11-29T19:00:00Z, the contract's examples
	vecClient       = "tenant-7:alice"
)

func bucketItem(tokens, updatedAt string, extra ...any) v.Item {
	it := v.Item{"pk": v.S("rl#" + vecClient)}
	if tokens != "" {
		it["tokens"] = v.N(tokens)
	}
	if updatedAt != "" {
		it["updated_at"] = v.N(updatedAt)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		it[extra[i].(string)] = extra[i+1].(v.Value)
	}
	return it
}

func bucketCases() []bucketVector {
	type c struct {
		name     string
		capacity float64
		rate     float64
		item     v.Item
		now      int64
		why      string
	}
	cases := []c{
		{"1: no item", 20, 1, nil, vecT0, "a missing item is a full bucket; create under attribute_not_exists(pk)"},
		{"2: 0.75 after refill", 20, 1, bucketItem("0.5", "1795978800000"), vecT0 + 250, "refilled < 1: refuse, retry_after until one whole token"},
		{"3: 2.0 after refill", 20, 1, bucketItem("0.5", "1795978800000"), vecT0 + 1500, "admit, write refilled - 1 under updated_at = :seen"},
		{"4: refill capped at capacity", 20, 1, bucketItem("3", "1795978680000"), vecT0, "min(C, tokens + elapsed * R)"},
		{"5: written this millisecond", 20, 1, bucketItem("1", "1795978801500"), vecT0 + 1500, "updated_at = max(now, seen + 1): strictly later"},
		{"6: reader clock 500 ms behind", 20, 1, bucketItem("4", "1795978801500"), vecT0 + 1000, "elapsed clamped to 0; the stamp never moves backwards"},
		{"7a: drained for 30 s, at 30 s", 20, 1, bucketItem("-30", "1795978800000"), vecT0 + 30000, "a timed drain climbs back to 0 after its duration"},
		{"7b: drained for 30 s, at 31 s", 20, 1, bucketItem("-30", "1795978800000"), vecT0 + 31000, "and one token a refill interval later"},
		{"tokens above capacity", 20, 1, bucketItem("25", "1795978800000"), vecT0, "a stored tokens above C reads as C"},
		{"exactly one token after refill", 20, 1, bucketItem("0", "1795978800000"), vecT0 + 1000, "admit at refilled >= 1, leaving 0"},
		{"one millisecond short", 20, 1, bucketItem("0", "1795978800000"), vecT0 + 999, "0.999 tokens: refuse for 1 ms (Retry-After: 1)"},
		{"fractional tokens summing near 1", 20, 1, bucketItem("0.537", "1795978800000"), vecT0 + 463, "floating point: tokens + elapsed / 1000 * R, in that order"},
		{"updated_at 1 s ahead, nearly empty", 20, 1, bucketItem("0.5", "1795978801000"), vecT0, "no refill until the clock reaches updated_at; the lead adds to retry_after"},
		{"full bucket, ttl of an hour", 20, 1, bucketItem("20", "1795978800000", "ttl", v.N("1795982400")), vecT0 + 60000, "ttl = ceil(updated_at / 1000) + max(3600, seconds until full)"},
		{"deep drain: ttl longer than an hour", 20, 1, bucketItem("-3599", "1795978800000"), vecT0 + 3600*1000, "ttl covers the longer refill"},
		{"write_id carried forward by the take", 20, 1, bucketItem("5", "1795978800000", "write_id", v.S("5f0c1e2d3c4b5a69788796a5b4c3d2e1")), vecT0,
			"a take copies write_id from the item it read (the LLD pseudocode does not); no decision depends on it"},
		{"write_id not a string is not carried", 20, 1, bucketItem("5", "1795978800000", "write_id", v.N("7")), vecT0,
			"only an S write_id is a token; anything else is dropped like an unknown attribute"},
		{"unknown attribute dropped by the write", 20, 1, bucketItem("5", "1795978800000", "note", v.S("x")), vecT0, "every write replaces the item whole with the contract's attributes"},
		{"non-millisecond now: updated_at not a round second", 20, 1, bucketItem("10", "1795978800123"), vecT0 + 877, "ttl rounds updated_at up to the second"},
		{"capacity 5, 0.5 token/s, no item", 5, 0.5, nil, vecT0, "limits are configuration, not stored"},
		{"capacity 5, 0.5 token/s, half a token", 5, 0.5, bucketItem("0", "1795978800000"), vecT0 + 1000, "retry_after = (1 - refilled) / R"},
		{"capacity 100, 10 token/s", 100, 10, bucketItem("0", "1795978800000"), vecT0 + 250, "2.5 tokens after 250 ms"},
		// malformed items fail open
		{"tokens a string", 20, 1, bucketItem("", "1795978800000", "tokens", v.S("five")), vecT0, "a malformed item fails open: allow, write nothing, count fail_open_error"},
		{"tokens missing", 20, 1, bucketItem("", "1795978800000"), vecT0, "tokens is required"},
		{"updated_at missing", 20, 1, bucketItem("5", ""), vecT0, "updated_at is required"},
		{"updated_at zero", 20, 1, bucketItem("5", "0"), vecT0, "updated_at must be positive"},
		{"updated_at a string", 20, 1, bucketItem("5", "", "updated_at", v.S("1795978800000")), vecT0, "updated_at must be a number"},
		{"tokens of type BOOL", 20, 1, bucketItem("", "1795978800000", "tokens", v.Of("BOOL", true)), vecT0, "a wrong-typed tokens is malformed"},
		{"unknown attribute of type M", 20, 1, bucketItem("5", "1795978800000", "meta", v.Of("M", map[string]any{})), vecT0, "attributes the contract does not name are ignored"},
	}
	out := make([]bucketVector, 0, len(cases))
	for _, c := range cases {
		out = append(out, bucketVector{Name: c.name, Client: vecClient, Capacity: c.capacity, RefillPerSecond: c.rate, Item: c.item, NowMs: c.now, Why: c.why})
	}
	return out
}

func runTake(t *testing.T, vec *bucketVector, va variant, it store.Item) takeResult {
	rec := &recorder{item: it, t: t}
	l, err := newTaker(rec, va, limiter.Config{Limits: ratelimit.Limits{Capacity: vec.Capacity, RefillPerSecond: vec.RefillPerSecond},
		Clock: clocktest.NewFake(time.UnixMilli(vec.NowMs))})
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Take(context.Background(), vec.Client)
	if err != nil {
		t.Fatalf("%s: %v", vec.Name, err)
	}
	if len(rec.puts) > 1 {
		t.Fatalf("%s: %d writes", vec.Name, len(rec.puts))
	}
	r := takeResult{Outcome: d.Outcome.String(), Allowed: d.Allowed, FailOpen: d.FailOpen}
	if !d.FailOpen {
		rem := d.Remaining
		r.Remaining = &rem
	}
	if !d.Allowed {
		ms := d.RetryAfter.Milliseconds()
		hdr := int64(math.Ceil(d.RetryAfter.Seconds()))
		r.RetryAfterMs, r.RetryAfterHeader = &ms, &hdr
	}
	if len(rec.puts) == 1 {
		r.Write = &rec.puts[0]
	}
	return r
}

// TestContractVectors generates docs/contracts/vectors/rate-limit-bucket.json
// from ratelimit's refill math, the race-free take and the LLD pseudocode,
// and fails when the checked-in file differs (make vectors rewrites it).
func TestContractVectors(t *testing.T) {
	t.Parallel()
	doc := bucketVectorFile{
		Description: "Rate-limit buckets (docs/contracts/rate-limit-bucket.md): the item as read in DynamoDB JSON " +
			"(null: no item), the limits and the reader's now_ms. status is what a reader (koshactl ratelimit get) computes " +
			"(null for a malformed item). take is the race-free take the data plane should run; lld the seed's pseudocode as " +
			"written. Each gives the outcome, the tokens remaining (or the refilled level when denied), retry_after in ms and " +
			"as a Retry-After header (whole seconds, rounded up), and the one conditional write to send (null: none), " +
			"in DynamoDB JSON with its ConditionExpression. Generated from the Go code by make vectors.",
		Contract:         "docs/contracts/rate-limit-bucket.md",
		MaxCASRetries:    limiter.DefaultMaxCASRetries,
		IdleTTLSeconds:   int64(ratelimit.IdleTTL.Seconds()),
		OnConditionFails: "re-read and take again, at most max_cas_retries times; then refuse with retry_after = 1/R (take) or allow unmetered (lld, flaw 3)",
		Cases:            bucketCases(),
	}
	for i := range doc.Cases {
		vec := &doc.Cases[i]
		var it store.Item
		if vec.Item != nil {
			var err error
			if it, err = v.StoreItem(vec.Item); err != nil {
				t.Fatal(err)
			}
		}
		vec.Take = runTake(t, vec, variantFixed, it)
		vec.LLD = runTake(t, vec, variantLLD, it)
		var b *ratelimit.Bucket
		if it != nil {
			bk, err := ratelimit.BucketFromItem(it)
			if err != nil {
				continue
			}
			b = &bk
		}
		l := ratelimit.Limits{Capacity: vec.Capacity, RefillPerSecond: vec.RefillPerSecond}
		st := ratelimit.StatusOf(vec.Client, b, l, time.UnixMilli(vec.NowMs))
		vec.Status = &bucketStatus{Tokens: st.Tokens, Admit: st.Admit, RetryAfterMs: st.RetryAfter.Milliseconds(), AheadMs: st.AheadOfClock.Milliseconds()}
	}
	v.Check(t, "rate-limit-bucket.json", doc)
}
