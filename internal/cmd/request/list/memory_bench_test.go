package list_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/procbench"
)

// listMemoryRequests and listMemoryCeiling are the measure of `request
// list --all` streaming: over 10,000 requests of the local store (half of
// them decided) it stays under 96 MiB resident
// (docs/benchmarks/lists.md).
const (
	listMemoryRequests = 10_000
	listMemoryCeiling  = 96 << 20
)

var (
	alice = audit.Identity{Actor: "arn:aws:iam::123456789012:user/alice", Source: audit.ActorSTS, UserID: "AIDAALICE"}
	bob   = audit.Identity{Actor: "arn:aws:iam::123456789012:user/bob", Source: audit.ActorSTS, UserID: "AIDABOB"}
)

// loadLocalRequests asks for n force-opens in the local store under
// stateDir, as koshactl asks for them (each with its record and its proof
// of asking, waiting a day), and denies every second one (its record, its
// proof and its closed marker): the table `request list --all` lists.
func loadLocalRequests(tb testing.TB, stateDir string, n int) {
	tb.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(stateDir, "local.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	c := config.BuiltinLocal()
	env := &cmdenv.Env{Name: "local", Context: c, Store: s, Clock: clock.Real{}}
	env.Kinds = builtin.For(s, clock.Real{}, "local", c)
	svc, log := env.Approvals(), env.Audit()
	for i := range n {
		dep := fmt.Sprintf("dep-%05d", i)
		r, _, err := svc.Submit(ctx, log, approval.Submission{Requester: alice, TTL: approval.MaxTTL,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1},
			Change: approval.Change{Action: breaker.ActionForceOpen, Targets: []string{dep}, Reason: "INC-4711: provider returns 503 for embeddings",
				Params: json.RawMessage(`{"for_seconds":1800}`), Before: map[string]json.RawMessage{dep: json.RawMessage("null")}}})
		if err != nil {
			tb.Fatal(err)
		}
		if i%2 == 1 {
			if _, _, err := svc.Decide(ctx, log, r.ID, bob, false, "not now"); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// memoryRequests is the local store of the memory benchmark.
var memoryRequests procbench.State

// TestMain removes the memory benchmark's store.
func TestMain(m *testing.M) {
	code := m.Run()
	memoryRequests.Remove()
	os.Exit(code)
}

// BenchmarkRequestListMemory runs `koshactl request list --all` as a
// process over 10,000 requests of the local store, half of them decided,
// in each output format (its output to the null device), and reports the
// process's peak resident memory (peak-rss-MiB); more than 96 MiB fails
// the benchmark. The local context's commands run in koshactl-full (the
// front hands them over), which is what is built and run here.
func BenchmarkRequestListMemory(b *testing.B) {
	bin := procbench.Build(b, "github.com/kosha-platform/koshactl/cmd/koshactl-full")
	env := memoryRequests.Env(b, func(tb testing.TB, dir string) {
		start := time.Now()
		loadLocalRequests(tb, dir, listMemoryRequests)
		b.Logf("loaded %d requests in %s", listMemoryRequests, time.Since(start).Round(time.Second))
	})
	env = append(env, "KOSHACTL_ACTOR=reader@test")
	procbench.PeakRSSByFormat(b, bin, env, listMemoryCeiling, fmt.Sprintf("request list --all of %d requests", listMemoryRequests), "request", "list", "--all")
}
