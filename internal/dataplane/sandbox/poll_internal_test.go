package sandbox

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	waitfor "github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// Issue 45: on the sandbox a clear reached every instance in 5.98-6.03 s
// and a force in 5.4-5.7 s, with a 5 s cache. An idle instance synced on
// its poll (every second, at its own phase), so after a read off that grid
// (the first sync at start, a request's, a tick the machine ran late) the
// next read waited for the first tick after the cache went stale: up to a
// poll period past the cache, for a change written just after a read (a
// clear right after a confirmed force is). An idle instance now syncs when
// its cache goes stale: a force and a clear written just after the
// instance read both reach it within the cache period, on an injected
// clock.
func TestIdleInstancePropagatesWithinTheCachePeriod(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"force", "clear"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			clk := clocktest.NewFake(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
			st := memstore.New()
			cfg := DefaultConfig() // the LLD's time: cache 5 s, poll 1 s
			cfg.Instances = 1
			srv, err := New(cfg, Deps{Store: st, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			in := srv.Fleet().Instances()[0]
			lg := audit.NewLog(st, clk, "test")
			ctx, cancel := context.WithCancel(context.Background())
			force := func() {
				if _, _, err := levertest.Force(ctx, st, clk, lg, levertest.Req{Dependency: OpenAI, Reason: "drill", Actor: "t", For: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			want := circuit.ForcedOpen
			if change == "clear" {
				force() // the first sync applies it: the clear comes right after
				want = circuit.Closed
			}
			in.SyncOverrides(ctx) // the first sync, as Start does: off the poll's grid
			others := clk.Waiters()
			done := make(chan struct{})
			go func() {
				defer close(done)
				in.pollOverrides(ctx, clk, srv.Config().OverridePoll, 700*time.Millisecond)
			}()
			t.Cleanup(func() { cancel(); <-done })
			parked := func() { waitfor.Until(t, "the poll waits", func() bool { return clk.Waiters() == others+1 }) }
			parked()

			clk.Advance(10 * time.Millisecond)
			written := clk.Now()
			if change == "clear" {
				if _, _, err := levertest.Clear(ctx, st, clk, lg, OpenAI, "t", "drill over"); err != nil {
					t.Fatal(err)
				}
			} else {
				force()
			}
			for in.BreakerState(OpenAI) != want {
				if took := clk.Now().Sub(written); took > 2*breaker.CacheTTL {
					t.Fatalf("the %s has not reached the instance %s after it was written", change, took)
				}
				clk.Advance(10 * time.Millisecond)
				parked()
			}
			if took := clk.Now().Sub(written); took > breaker.CacheTTL {
				t.Errorf("the %s reached the instance %s after it was written, past the %s cache", change, took, breaker.CacheTTL)
			} else {
				t.Logf("the %s reached the instance %s after it was written", change, took)
			}
		})
	}
}
