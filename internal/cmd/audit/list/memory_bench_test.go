package list_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/procbench"
)

// listMemoryRecords and listMemoryCeiling are the measure of a list that
// streams: `audit list --limit 100000` over 100,000 records of the local
// store stays under 256 MiB resident (docs/benchmarks/lists.md).
const (
	listMemoryRecords = 100_000
	listMemoryCeiling = 256 << 20
)

// loadLocalLog writes n audit records, a second apart ending now, into the
// local store under stateDir, as koshactl writes them (a before and after
// document each, a reason), 100 to a transaction.
func loadLocalLog(tb testing.TB, stateDir string, n int) {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(stateDir, "local.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	now := time.Now().Truncate(time.Millisecond)
	for i := 0; i < n; i += store.MaxChangeOps {
		token, err := store.NewWriteID()
		if err != nil {
			tb.Fatal(err)
		}
		var ops []store.Op
		for j := i; j < min(i+store.MaxChangeOps, n); j++ {
			r := audit.Record{ID: fmt.Sprintf("%016x", j), Time: now.Add(-time.Duration(j) * time.Second), Actor: "arn:aws:sts::123456789012:assumed-role/ops/alice",
				ActorSource: audit.ActorSTS, Action: "breaker.force-open", Subject: fmt.Sprintf("breaker#dep-%03d", j%500),
				Reason: "INC-4711: provider returns 503 for embeddings", Context: "prod", Outcome: "ok", Change: token,
				Before: []byte(`{"state":"forced_open","reason":"earlier","actor":"bob","created_at":1796080800000,"version":3}`),
				After:  []byte(`{"state":"forced_open","reason":"INC-4711","actor":"alice","created_at":1796084400000,"expires_at":1796086200000,"version":4}`)}
			ops = append(ops, store.PutOp(r.Item(), store.IfAbsent()))
		}
		if err := s.Transact(context.Background(), store.Change{Token: token, Ops: ops, Proof: ops[0].PK()}); err != nil {
			tb.Fatal(err)
		}
	}
}

// memoryLog is the local store of the memory benchmark.
var memoryLog procbench.State

// TestMain removes the memory benchmark's store.
func TestMain(m *testing.M) {
	code := m.Run()
	memoryLog.Remove()
	os.Exit(code)
}

// BenchmarkAuditListMemory runs `koshactl audit list --limit 100000` as a
// process over 100,000 records of the local store, in each output format
// (its output to the null device), and reports the process's peak resident
// memory (peak-rss-MiB); more than 256 MiB fails the benchmark. The local
// context's commands run in koshactl-full (the front hands them over), which
// is what is built and run here.
func BenchmarkAuditListMemory(b *testing.B) {
	bin := procbench.Build(b, "github.com/kosha-platform/koshactl/cmd/koshactl-full")
	env := memoryLog.Env(b, func(tb testing.TB, dir string) { loadLocalLog(tb, dir, listMemoryRecords) })
	procbench.PeakRSSByFormat(b, bin, env, listMemoryCeiling, fmt.Sprintf("audit list of %d records", listMemoryRecords), "audit", "list", "--limit", fmt.Sprint(listMemoryRecords))
}
