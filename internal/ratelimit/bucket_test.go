package ratelimit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

func TestValidateClientID(t *testing.T) {
	for _, ok := range []string{"a", "alice", "tenant-7:user@example.com", "svc.core_api", strings.Repeat("x", 128), "A.B_C:D@E-F-0"} {
		if err := ratelimit.ValidateClientID(ok); err != nil {
			t.Errorf("ValidateClientID(%q) = %v, want nil", ok, err)
		}
	}
	cases := []struct{ id, mention string }{
		{"", "empty"},
		{strings.Repeat("x", 129), "129 characters"},
		{"bad id", "a space at position 4"},
		{"a/b", `'/' at position 2`},
		{"émile", `'é' at position 1`},
		{"a\x00b", `'\x00' at position 2`},
		{"ab\xff", "not UTF-8 at position 3"},
		{"rl#alice", `without the "rl#" key prefix ("alice")`},
	}
	for _, tc := range cases {
		err := ratelimit.ValidateClientID(tc.id)
		if !errors.Is(err, ratelimit.ErrInvalidClient) {
			t.Errorf("ValidateClientID(%q) = %v, want ErrInvalidClient", tc.id, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ValidateClientID(%q) = %q, want it to mention %q", tc.id, err, tc.mention)
		}
	}
}

func TestBucketCodec(t *testing.T) {
	b := ratelimit.Bucket{Client: "alice", Tokens: 12.375, UpdatedAtMs: t0 + 5, TTL: t0/1000 + 3601}
	it := b.Item()
	want := store.Item{"pk": "rl#alice", "tokens": 12.375, "updated_at": t0 + 5, "ttl": t0/1000 + 3601}
	for k, v := range want {
		if !store.Equal(it[k], v) {
			t.Errorf("item[%s] = %v, want %v", k, it[k], v)
		}
	}
	if len(it) != len(want) {
		t.Errorf("item has %d attributes, want %d: %v", len(it), len(want), it)
	}
	got, err := ratelimit.BucketFromItem(it)
	if err != nil || got != b {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, b)
	}
	// Whole token counts may read back as integers; updated_at as a decimal.
	got, err = ratelimit.BucketFromItem(store.Item{"pk": "rl#bob", "tokens": int64(3), "updated_at": float64(t0)})
	if err != nil || got.Tokens != 3 || got.UpdatedAtMs != t0 || got.TTL != 0 {
		t.Errorf("integer tokens = %+v, %v", got, err)
	}
	for name, bad := range map[string]store.Item{
		"wrong prefix":       {"pk": "breaker#x", "tokens": 1.0, "updated_at": t0},
		"empty client":       {"pk": "rl#", "tokens": 1.0, "updated_at": t0},
		"tokens a string":    {"pk": "rl#x", "tokens": "1", "updated_at": t0},
		"no tokens":          {"pk": "rl#x", "updated_at": t0},
		"no updated_at":      {"pk": "rl#x", "tokens": 1.0},
		"updated_at is zero": {"pk": "rl#x", "tokens": 1.0, "updated_at": int64(0)},
	} {
		if _, err := ratelimit.BucketFromItem(bad); !errors.Is(err, ratelimit.ErrMalformedBucket) {
			t.Errorf("%s: err = %v, want ErrMalformedBucket", name, err)
		}
	}
}

func TestStatusOf(t *testing.T) {
	l := ratelimit.DefaultLimits()
	now := time.UnixMilli(t0)

	missing := ratelimit.StatusOf("new", nil, l, now)
	if missing.Exists || missing.Tokens != 20 || !missing.Admit || !missing.Full() || missing.UntilFull != 0 || missing.NextToken != 0 {
		t.Errorf("missing item should be a full bucket: %+v", missing)
	}

	s := ratelimit.StatusOf("c", &ratelimit.Bucket{Client: "c", Tokens: 0.25, UpdatedAtMs: t0 - 500}, l, now)
	if s.Tokens != 0.75 || s.Admit || !s.Throttled() {
		t.Errorf("0.25 tokens 500 ms ago: %+v", s)
	}
	if s.RetryAfter != 250*time.Millisecond || s.NextToken != 250*time.Millisecond || s.UntilFull != 19250*time.Millisecond {
		t.Errorf("waits: retry %v next %v full %v", s.RetryAfter, s.NextToken, s.UntilFull)
	}

	// updated_at 300 ms in the future: no refill until the clock gets there.
	ahead := ratelimit.StatusOf("c", &ratelimit.Bucket{Client: "c", Tokens: 0.5, UpdatedAtMs: t0 + 300}, l, now)
	if ahead.Tokens != 0.5 || ahead.AheadOfClock != 300*time.Millisecond || ahead.RetryAfter != 800*time.Millisecond {
		t.Errorf("future updated_at: %+v", ahead)
	}
	if exp := ahead.TTLExpiry(); !exp.IsZero() {
		t.Errorf("no ttl attribute, TTLExpiry = %v", exp)
	}

	// A corrupt item (updated_at in microseconds, 1800 years ahead) or one
	// deep in debt reports waits that saturate, never negative ones.
	for _, b := range []ratelimit.Bucket{
		{Client: "c", Tokens: 0, UpdatedAtMs: t0 * 1000},
		{Client: "c", Tokens: -1e15, UpdatedAtMs: t0}, // 31 million years to refill
	} {
		s := ratelimit.StatusOf("c", &b, l, now)
		if s.RetryAfter <= 0 || s.NextToken <= 0 || s.UntilFull <= 0 || s.AheadOfClock < 0 {
			t.Errorf("%+v: waits retry %v next %v full %v ahead %v", b, s.RetryAfter, s.NextToken, s.UntilFull, s.AheadOfClock)
		}
	}
	withTTL := ratelimit.StatusOf("c", &ratelimit.Bucket{Client: "c", Tokens: 1, UpdatedAtMs: t0, TTL: t0/1000 + 3600}, l, now)
	if got := withTTL.TTLExpiry(); !got.Equal(now.Add(time.Hour)) {
		t.Errorf("TTLExpiry = %v", got)
	}
}
