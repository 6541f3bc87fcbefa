package ratelimit_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// attr builds one stored attribute the way a backend hands it over: kind 0
// leaves it out, 1 stores text as DynamoDB's N would arrive (a number when
// store.ParseNumber reads it, else the text), 2 stores text as a string.
func attr(it store.Item, name string, kind uint8, text string) {
	switch kind % 3 {
	case 1:
		if v, err := store.ParseNumber(text); err == nil {
			it[name] = v
			return
		}
		it[name] = text
	case 2:
		it[name] = text
	}
}

// FuzzBucketFromItem feeds arbitrary stored items to the bucket decoder
// that koshactl ratelimit get/list and every Take run on what the table
// holds. It must never panic, and must refuse with ErrMalformedBucket what it
// cannot read. A bucket it accepts must re-encode to an item that decodes to
// the same bucket, and its status at any instant must be sane for a finite
// token count: never above capacity, no negative wait.
//
//	go test -run '^$' -fuzz '^FuzzBucketFromItem$' -fuzztime 20s ./internal/ratelimit
func FuzzBucketFromItem(f *testing.F) {
	f.Add("rl#client-1", uint8(1), "19.5", uint8(1), "1795978800000", uint8(1), "1795982400", int64(1795978800500))
	f.Add("rl#client-1", uint8(1), "-3.25", uint8(1), "1795978800000", uint8(0), "", int64(1795978700000))
	f.Add("rl#a", uint8(1), "20", uint8(1), "1795978800000.9", uint8(2), "soon", int64(0))
	f.Add("rl#", uint8(1), "1", uint8(1), "1", uint8(0), "", int64(1))
	f.Add("breaker#openai", uint8(1), "1", uint8(1), "1", uint8(0), "", int64(1))
	f.Add("rl#a", uint8(2), "many", uint8(1), "1795978800000", uint8(0), "", int64(1))
	f.Add("rl#a", uint8(1), "NaN", uint8(1), "1795978800000", uint8(0), "", int64(1795978800000))
	f.Add("rl#a", uint8(1), "1e300", uint8(1), "9223372036854775807", uint8(1), "-5", int64(-1))
	f.Add("rl#a", uint8(1), "5", uint8(1), "0", uint8(0), "", int64(1))
	f.Fuzz(func(t *testing.T, pk string, tokensKind uint8, tokens string, updatedKind uint8, updated string,
		ttlKind uint8, ttl string, nowMs int64) {
		it := store.Item{store.PK: pk}
		attr(it, ratelimit.AttrTokens, tokensKind, tokens)
		attr(it, ratelimit.AttrUpdatedAt, updatedKind, updated)
		attr(it, store.TTLAttr, ttlKind, ttl)
		b, err := ratelimit.BucketFromItem(it)
		if err != nil {
			if !errors.Is(err, ratelimit.ErrMalformedBucket) {
				t.Fatalf("BucketFromItem(%v) error %v does not match ErrMalformedBucket", it, err)
			}
			return
		}
		if b.Client == "" || ratelimit.Key(b.Client) != pk || b.UpdatedAtMs <= 0 {
			t.Fatalf("BucketFromItem(%v) = %+v", it, b)
		}
		back, err := ratelimit.BucketFromItem(b.Item())
		if err != nil {
			t.Fatalf("BucketFromItem(%v) = %+v, whose Item %v does not decode: %v", it, b, b.Item(), err)
		}
		want := b
		if want.TTL < 0 {
			want.TTL = 0 // Item leaves a ttl that is not positive out
		}
		if back != want && !(math.IsNaN(back.Tokens) && math.IsNaN(want.Tokens)) {
			t.Fatalf("BucketFromItem(%v) = %+v, re-encoded and decoded as %+v", it, b, back)
		}

		l := ratelimit.DefaultLimits()
		s := ratelimit.StatusOf(b.Client, &b, l, time.UnixMilli(nowMs))
		// A NaN or infinite count has no sane reading; a clock before 1970
		// is not one koshactl runs on.
		if math.IsNaN(b.Tokens) || math.IsInf(b.Tokens, 0) || nowMs < 0 {
			return
		}
		if s.Tokens > l.Capacity || s.Admit != (s.Tokens >= 1) {
			t.Fatalf("StatusOf(%+v at %d ms) = %+v", b, nowMs, s)
		}
		if s.RetryAfter < 0 || s.NextToken < 0 || s.UntilFull < 0 || s.AheadOfClock < 0 {
			t.Fatalf("StatusOf(%+v at %d ms) has a negative wait: %+v", b, nowMs, s)
		}
	})
}
