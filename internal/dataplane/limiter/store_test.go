package limiter_test

import (
	"context"
	"math"
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

// endpoint is the moto server serving the package.
var endpoint string

func TestMain(m *testing.M) { moto.RunMain(m, &endpoint) }

func motoURL(testing.TB) string { return endpoint }

// backends opens a fresh, empty store of each kind for one test.
var backends = map[string]func(t *testing.T) store.Store{
	"sqlite": func(t *testing.T) store.Store {
		return sqlitetest.NewStore(t)
	},
	"dynamodb": func(t *testing.T) store.Store {
		return dynamotest.NewStore(t, motoURL(t))
	},
}

// TestConformance runs the take on both real stores: what the limiter
// writes must read back identically, whichever take wrote it.
func TestConformance(t *testing.T) {
	t.Parallel()
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Run("take-and-refill", func(t *testing.T) { conformTake(t, open(t)) })
			t.Run("variants-share-items", func(t *testing.T) { conformMixedVariants(t, open(t)) })
		})
	}
}

func conformTake(t *testing.T, s store.Store) {
	for _, v := range variants {
		clk := clocktest.NewFake(epoch)
		l := newLimiter(t, s, v, clk)
		client := "take-" + v.String()
		if d := take(t, l, client); !d.Allowed || d.Remaining != 19 {
			t.Fatalf("%s first take: %+v", v, d)
		}
		it, err := s.Get(context.Background(), ratelimit.Key(client))
		if err != nil {
			t.Fatal(err)
		}
		if ttl, ok := it.Int("ttl"); !ok || ttl != t0/1000+3600 {
			t.Errorf("%s ttl = %v", v, it["ttl"])
		}
		for range 19 {
			take(t, l, client)
		}
		if d := take(t, l, client); d.Allowed {
			t.Fatalf("%s: bucket did not run dry: %+v", v, d)
		}
		// Fractional tokens round-trip exactly through the store.
		clk.Advance(1537 * time.Millisecond)
		if v == variantFixed {
			clk.Advance(19 * time.Millisecond)
		}
		d := take(t, l, client)
		if !d.Allowed || math.Abs(d.Remaining-0.537) > 1e-9 {
			t.Fatalf("%s after 1.537 s: %+v", v, d)
		}
		if b := ratelimittest.Stored(t, s, client); b.Tokens != d.Remaining {
			t.Errorf("%s stored %v, want exactly the %v written", v, b.Tokens, d.Remaining)
		}
		if d := take(t, l, client); d.Allowed || d.RetryAfter != 463*time.Millisecond {
			t.Errorf("%s: %+v", v, d)
		}
	}
}

// An item written by the fixed variant is read correctly by the LLD variant
// and the other way round: the fix keeps the contract's attributes and
// meaning.
func conformMixedVariants(t *testing.T, s store.Store) {
	clk := clocktest.NewFake(epoch)
	fixed := newLimiter(t, s, variantFixed, clk)
	lld := newLimiter(t, s, variantLLD, clk)
	admitted := 0
	for i := range 30 {
		l := fixed
		if i%2 == 1 {
			l = lld
		}
		clk.Advance(10 * time.Millisecond)
		if take(t, l, "mixed").Allowed {
			admitted++
		}
	}
	// 20 + 0.3 s of refill.
	if admitted != 20 {
		t.Errorf("alternating variants admitted %d, want 20", admitted)
	}
}

func TestRaceSQLite(t *testing.T) {
	t.Parallel()
	raceOnStore(t, func(t *testing.T) limiter.BucketStore { return backends["sqlite"](t) })
}

func TestRaceDynamoDB(t *testing.T) {
	t.Parallel()
	raceOnStore(t, func(t *testing.T) limiter.BucketStore { return backends["dynamodb"](t) })
}
