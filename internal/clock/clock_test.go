package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

// TestSleepWaitsOnTheClockAndEndsWithTheContext: Sleep returns nil once
// the clock has moved past d, and the context's error when it ends first.
func TestSleepWaitsOnTheClockAndEndsWithTheContext(t *testing.T) {
	f := clocktest.NewFake(time.Unix(0, 0))
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(t.Context(), f, time.Minute) }()
	for {
		changed := f.WaitersChanged()
		if f.Waiters() > 0 {
			break
		}
		<-changed
	}
	f.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatalf("Sleep after the clock moved a minute: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := clock.Sleep(ctx, f, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a canceled context: %v, want context.Canceled", err)
	}
}
