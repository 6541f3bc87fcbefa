package circuit

import (
	"context"
	"log/slog"
	"testing"

	"github.com/kosha-platform/koshactl/internal/breaker"
)

// Comparisons with failsafe-go are in internal/dataplane/resilience (one run,
// side by side); these isolate the breaker's own paths.

func benchBreaker(b *testing.B) *Breaker {
	br, err := New(Settings{Name: "core-api", MinCalls: 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return br
}

func BenchmarkAllowDone(b *testing.B) {
	br := benchBreaker(b)
	b.ReportAllocs()
	for b.Loop() {
		p, _ := br.Allow()
		br.Done(p, Success)
	}
}

func BenchmarkAllowRejectedOpen(b *testing.B) {
	br := benchBreaker(b)
	br.ForceOpen()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Allow(); err == nil {
			b.Fatal("admitted")
		}
	}
}

// BenchmarkForceWatcherSyncFresh is the per-call cost of honoring the
// override between reads: a clock read and two atomic loads.
func BenchmarkForceWatcherSyncFresh(b *testing.B) {
	br := benchBreaker(b)
	w := NewForceWatcher(br, ForceSourceFunc(func(context.Context, string) (breaker.Force, error) { return breaker.Force{}, nil }),
		WatcherSettings{})
	ctx := context.Background()
	w.Sync(ctx)
	b.ReportAllocs()
	for b.Loop() {
		w.Sync(ctx)
	}
}
