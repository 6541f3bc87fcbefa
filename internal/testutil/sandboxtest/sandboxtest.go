package sandboxtest

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// Fleet is a running sandbox and the store it shares with koshactl's local
// context.
type Fleet struct {
	*sandbox.Server
	Store store.Store
}

// Start runs a sandbox of instant downstreams at time scale (LLD durations
// scale times faster) over dir's local.db and local chaos key, chaos
// headers honored when chaos is set, as `koshactl sandbox` would on that
// installation. Each of with changes the configuration first (traffic, a
// test needs calls counted).
func Start(t testing.TB, dir string, scale float64, chaos bool, with ...func(*sandbox.Config)) *Fleet {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := sandbox.DefaultConfig()
	cfg.TimeScale = scale
	cfg.ChaosEnabled = chaos
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileInstant)
	cfg.Profile = sandbox.ProfileInstant
	for _, w := range with {
		w(&cfg)
	}
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: st, Keys: keys.NewLocal(dir), Audit: audit.NewLog(st, clock.Real{}, "local"),
		Logger: slog.New(slog.DiscardHandler), ContextName: "local"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context(), ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait.Ceiling)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("sandbox shutdown: %v", err)
		}
	})
	return &Fleet{Server: srv, Store: st}
}
