package apply_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/sandboxtest"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// End to end on the wall clock: the reconciler (the built binary, apply
// --watch) opens a window a few seconds ahead on a sandbox fleet, which
// obeys it; killed with SIGKILL mid-window, it leaves an override that
// lapses at the window's end, and the fleet closes again.
func TestReconcilerOnTheSandboxAndKilledMidWindow(t *testing.T) {
	bin := koshabin.Path(t)
	clitest.New(t)
	sb := sandboxtest.Start(t, os.Getenv("KOSHACTL_STATE_DIR"), 20, false) // the override cache is 250 ms
	st := sb.Store
	instances := sandbox.DefaultConfig().Instances
	fleet, err := metrics.NewPrometheus([]string{sb.URL() + sandbox.PathMetrics}, metrics.PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	every := func(want gauge.State) func() bool {
		return func() bool {
			snap, err := fleet.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Instances: []string{"openai"}})
			if err != nil {
				return false
			}
			g := snap.Series["openai"]
			n := 0
			for _, in := range g.Instances {
				if v, ok := in.Current(); !ok || v != float64(want) {
					return false
				}
				n++
			}
			return n == instances
		}
	}
	wait.Until(t, "the fleet reporting openai closed", every(gauge.Closed))

	start := time.Now().Add(3 * time.Second).Truncate(time.Second)
	end := start.Add(8 * time.Second)
	file := filepath.Join(t.TempDir(), "levers.yaml")
	src := fmt.Sprintf("version: 1\ncontext: local\nwindows:\n  - {dependency: openai, reason: e2e window, start: %s, end: %s}\n",
		start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "apply", "-f", file, "--watch", "--interval", "1s") //nolint:gosec // G204: the test's own binary
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	ov := breaker.NewOverrides(st, clock.Real{})
	wait.Until(t, "the window's override", func() bool {
		o, err := ov.Get(context.Background(), "openai")
		return err == nil && o.ActiveAt(time.Now())
	})
	o, err := ov.Get(context.Background(), "openai")
	if err != nil || !o.ExpiresAt.Equal(end.UTC()) || o.ManagedBy == "" {
		t.Fatalf("override %+v (%v), want one expiring at the window's end %s, managed", o, err, end.UTC())
	}
	if o.CreatedAt.Before(start) {
		t.Errorf("forced at %s, before the window's start %s", o.CreatedAt, start)
	}
	wait.Until(t, "every instance obeying the window's override", every(gauge.ForcedOpen))

	// The reconciler dies mid-window: nothing clears the override, and
	// it lapses at the window's end on its own.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wait.Until(t, "the fleet closing openai after the window's end", every(gauge.Closed))
	if now := time.Now(); now.Before(end) {
		t.Errorf("the fleet released openai at %s, before the window's end %s\n%s", now, end, out.String())
	}
}
