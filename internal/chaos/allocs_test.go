//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// counts are only meaningful without it.

package chaos_test

import (
	"context"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos"
)

// TestVerifyDoesNotAllocate pins the data-plane promise: verifying a valid
// header against a chaostest.KeySet allocates nothing once the HMAC pool is warm.
func TestVerifyDoesNotAllocate(t *testing.T) {
	cur, prev := testKey(t, 1), testKey(t, 2)
	v := mustVerifier(t, mustKeySet(t, cur, prev), chaos.Options{})
	value := signAt(t, prev, fieldsExp(t0.Add(60e9)))
	ctx := context.Background()
	if n := testing.AllocsPerRun(200, func() {
		if _, err := v.VerifyAt(ctx, value, t0); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Verify allocates %.1f times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(200, func() { _, _ = chaos.Parse(value) }); n != 0 {
		t.Errorf("Parse allocates %.1f times per call, want 0", n)
	}
}
