package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeTB records a failure instead of failing the test, and hands Until a
// context of its own.
type fakeTB struct {
	testing.TB
	ctx    context.Context
	failed []string
}

func (f *fakeTB) Context() context.Context { return f.ctx }
func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Fatal(args ...any)        { f.failed = append(f.failed, fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = append(f.failed, fmt.Sprintf(format, args...))
}

func TestUntilReturnsAtOnceWhenTheStateHolds(t *testing.T) {
	t.Parallel()
	// An ended context proves Until did not wait: cond is checked first.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f := &fakeTB{TB: t, ctx: ctx}
	calls := 0
	Until(f, "a state that holds", func() bool { calls++; return true })
	if calls != 1 || len(f.failed) != 0 {
		t.Fatalf("cond called %d times, failures %q; want once, none", calls, f.failed)
	}
}

func TestUntilReturnsWhenTheStateComes(t *testing.T) {
	t.Parallel()
	f := &fakeTB{TB: t, ctx: t.Context()}
	calls := 0
	Until(f, "the third check", func() bool { calls++; return calls == 3 })
	if calls != 3 || len(f.failed) != 0 {
		t.Fatalf("cond called %d times, failures %q; want 3, none", calls, f.failed)
	}
}

func TestUntilFailsTheTestWhenTheStateNeverComes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	f := &fakeTB{TB: t, ctx: ctx}
	calls := 0
	Until(f, "the sandbox to serve its address file", func() bool { calls++; return false })
	if len(f.failed) != 1 || !strings.Contains(f.failed[0], "waiting for the sandbox to serve its address file: context deadline exceeded") {
		t.Fatalf("failures %q, want one naming the state", f.failed)
	}
	if calls < 1 {
		t.Fatalf("cond called %d times, want it checked", calls)
	}
}

func TestForFailsAtTheCeilingNamingTheState(t *testing.T) {
	t.Parallel()
	calls := 0
	err := poll(t.Context(), 20*time.Millisecond, "every instance forced", func() bool { calls++; return false })
	if err == nil || err.Error() != "waited 20ms for every instance forced" {
		t.Fatalf("err = %v, want the ceiling naming the state", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v: the ceiling is not the context's end", err)
	}
	if calls < 2 {
		t.Fatalf("cond checked %d times in 20ms, want it polled", calls)
	}
}

func TestForStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(t.Context())
	ended := errors.New("the drill ended")
	calls := 0
	err := For(ctx, "the child's pid file", func() bool {
		calls++
		if calls == 2 {
			cancel(ended)
		}
		return false
	})
	if !errors.Is(err, ended) || !strings.Contains(err.Error(), "waiting for the child's pid file") {
		t.Fatalf("err = %v, want the context's cause and the state", err)
	}
	// A tick already due when the context ended may check cond once more.
	if calls < 2 || calls > 3 {
		t.Fatalf("cond checked %d times, want it to stop when the context ended", calls)
	}
}

func TestForRunsOffTheTestsGoroutine(t *testing.T) {
	t.Parallel()
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- For(t.Context(), "the test to say ready", func() bool {
			select {
			case <-ready:
				return true
			default:
				return false
			}
		})
	}()
	close(ready)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
