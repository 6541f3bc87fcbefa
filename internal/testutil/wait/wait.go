package wait

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Ceiling bounds one wait for a state. A healthy run reaches the state in
// well under a second, or a few seconds on a loaded machine; Ceiling is
// what a hang costs before the test fails with what it saw last.
const Ceiling = 2 * time.Minute

// Tick is how often [Until] and [For] check a condition that does not hold
// yet: often enough that a test goes on within milliseconds of the state,
// seldom enough that a test waiting on a loaded machine does not load it
// further.
const Tick = 5 * time.Millisecond

// Until returns as soon as cond holds: it checks cond at once, then every
// [Tick]. It fails t with "waited <Ceiling> for <what>" when [Ceiling]
// passes first, or when the test's context ends. what names the state, as
// in "the sandbox to serve its address file".
//
// cond runs on the caller's goroutine, so it may itself fail t (a process
// that exited before reaching the state). Until must be called from the
// test's goroutine; elsewhere, or to report the last state seen, use [For].
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if err := For(t.Context(), what, cond); err != nil {
		t.Fatal(err)
	}
}

// For returns nil as soon as cond holds: it checks cond at once, then every
// [Tick]. It returns an error naming what when [Ceiling] passes first
// ("waited 2m0s for <what>"), or when ctx ends (wrapping ctx's cause). cond
// runs on the caller's goroutine.
//
// Use it on a goroutine other than the test's (which must not call
// t.Fatal), for a poll that ends with a context, or to fail with the last
// state cond saw:
//
//	var screen string
//	if err := wait.For(t.Context(), "the screen to show the row", func() bool {
//		screen = read()
//		return strings.Contains(screen, "openai")
//	}); err != nil {
//		t.Fatalf("%v; the last screen:\n%s", err, screen)
//	}
func For(ctx context.Context, what string, cond func() bool) error {
	return poll(ctx, Ceiling, what, cond)
}

// poll is [For] with the ceiling as a parameter, so this package's tests
// can see it pass without waiting minutes.
func poll(ctx context.Context, ceiling time.Duration, what string, cond func() bool) error {
	if cond() {
		return nil
	}
	start := time.Now()
	bound := time.NewTimer(ceiling)
	defer bound.Stop()
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped after %s waiting for %s: %w",
				time.Since(start).Round(time.Millisecond), what, context.Cause(ctx))
		case <-bound.C:
			return fmt.Errorf("waited %s for %s", ceiling, what)
		case <-tick.C:
			if cond() {
				return nil
			}
		}
	}
}
