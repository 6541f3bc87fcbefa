package limiter_test

import (
	"context"
	"testing"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/ratelimit/ratelimittest"
)

const t0 = ratelimittest.T0

var epoch = ratelimittest.Epoch

func newLimiter(t *testing.T, s limiter.BucketStore, v variant, clk clock.Clock) taker {
	t.Helper()
	l, err := newTaker(s, v, limiter.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func take(t *testing.T, l taker, client string) limiter.Decision {
	t.Helper()
	d, err := l.Take(context.Background(), client)
	if err != nil {
		t.Fatalf("take %s: %v", client, err)
	}
	return d
}
