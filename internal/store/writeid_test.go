package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

// The re-read rule: a write the caller's cancellation stopped is re-read on
// a context of its own (live, bounded), a failure that may have been applied
// on the caller's, and one that was never applied not at all.
func TestRereadContext(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		err     error
		ok, own bool
	}{
		{"interrupted in flight", canceled, fmt.Errorf("put: %w", context.Canceled), true, true},
		{"interrupted, throttled before", canceled, store.ErrThrottled, false, false},
		{"answer lost", context.Background(), store.ErrUnavailable, true, false},
		{"refused", context.Background(), store.ErrConditionFailed, true, false},
		{"throttled", context.Background(), store.ErrThrottled, false, false},
	} {
		rctx, done, ok := store.RereadContext(tc.ctx, tc.err)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
		if own := rctx != tc.ctx; own != tc.own {
			t.Errorf("%s: a context of its own %v, want %v", tc.name, own, tc.own)
		}
		if tc.own {
			if rctx.Err() != nil {
				t.Errorf("%s: the re-read's context is already done: %v", tc.name, rctx.Err())
			}
			if _, ok := rctx.Deadline(); !ok {
				t.Errorf("%s: the re-read's context has no deadline", tc.name)
			}
		}
		done()
	}
}
