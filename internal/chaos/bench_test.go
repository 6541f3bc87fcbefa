package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
)

// benchSetup returns a verifier over a two-key set (current and previous,
// as after a rotation) and a header signed by the previous key, so the
// lookup walks the set.
func benchSetup(b *testing.B) (*chaos.Verifier, string, time.Time) {
	cur, prev := testKey(b, 1), testKey(b, 2)
	v := mustVerifier(b, mustKeySet(b, cur, prev), chaos.Options{})
	f := chaos.Fields{Target: chaos.TargetScreeningSim, Fault: chaos.FaultLatency, Ms: 250, P: chaos.Prob(5000), Exp: t0.Add(5 * time.Minute).Unix(), JTI: "q8fZ0m3uXh7yLp2NaVbW4g"}
	return v, signAt(b, prev, f), t0
}

// BenchmarkVerify is the data-plane path: a valid header checked end to
// end (parse, target, kid, HMAC, expiry, cap).
func BenchmarkVerify(b *testing.B) {
	v, value, now := benchSetup(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyAt(ctx, value, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyParallel is Verify from many goroutines at once, as a
// server handles concurrent requests (the HMAC states are pooled per key).
func BenchmarkVerifyParallel(b *testing.B) {
	v, value, now := benchSetup(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.VerifyAt(ctx, value, now); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkVerifyRejectTampered is the cost of turning away a forged
// header (the error path allocates its explanation).
func BenchmarkVerifyRejectTampered(b *testing.B) {
	v, value, now := benchSetup(b)
	tampered := []byte(value)
	tampered[len("v=1;kid=M4ZWiFh7Mho;target=screening-sim;fault=latency;ms=")] = '9'
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyAt(ctx, string(tampered), now); err == nil {
			b.Fatal("tampered header verified")
		}
	}
}

// BenchmarkParse is syntax alone.
func BenchmarkParse(b *testing.B) {
	_, value, _ := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chaos.Parse(value); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSign is minting's signing step.
func BenchmarkSign(b *testing.B) {
	key := testKey(b, 1)
	f := chaos.Fields{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError, P: chaos.ProbOne, Exp: t0.Unix(), JTI: "q8fZ0m3uXh7yLp2NaVbW4g"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chaostest.Sign(key, f); err != nil {
			b.Fatal(err)
		}
	}
}
