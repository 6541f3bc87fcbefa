//go:build unix

package scalebench_test

import (
	"context"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
	"github.com/kosha-platform/koshactl/internal/testutil/procbench"
)

// clearAllOverrides is the size: 10,000 overrides, which clear
// --all once cleared in 18 s and 1.28 GB (a goroutine and two requests per
// override), recording some of them.
const clearAllOverrides = 10_000

// clearAllOnMoto is the size moto is measured at. moto 5.2.1 deep-copies
// the whole table once per action of a TransactWriteItems (100 copies a
// transaction, to roll back) and answers HTTP 500 when two transactions
// copy at once: a transaction on a 10,000-override table takes it longer
// than koshactl's 10 s request timeout. DynamoDB does neither; the
// embedded store, the same code path to its own SQL transaction, is
// measured at the full size.
const clearAllOnMoto = 500

// BenchmarkClearAll runs the koshactl binary's `breaker clear --all`, each
// iteration on a table of its own holding n overrides (loaded while the
// timer is stopped): the embedded store at 10,000, and moto (the DynamoDB
// test server) at [clearAllOnMoto]. It reports the process's wall time
// (sec/op) and peak resident memory (the kernel's max RSS of the process,
// peak-rss-MiB, the worst iteration); on moto, the requests it made by
// operation: its scans, its batch reads (none: each clear is conditional
// on what the scan found) and its transactions (50 overrides and their
// records each), with any refusal (tx-refused/op, retried by the SDK)
// apart; moto's requests pass one at a time (its front). Every
// clear must be recorded exactly once.
func BenchmarkClearAll(b *testing.B) {
	// koshactl-full: a local context's commands run there (the front hands
	// them over), and on moto it runs what the front would.
	bin := procbench.Build(b, "github.com/kosha-platform/koshactl/cmd/koshactl-full")
	b.Run(fmt.Sprintf("store=embedded/overrides=%d", clearAllOverrides), func(b *testing.B) {
		dir := b.TempDir()
		round := 0
		benchClearAll(b, bin, clearAllOverrides, func() (controlStore, []string, func()) {
			round++
			state := filepath.Join(dir, fmt.Sprint(round))
			db, err := sqlite.Open(context.Background(), filepath.Join(state, "local.db"))
			if err != nil {
				b.Fatal(err)
			}
			env := append(os.Environ(), "KOSHACTL_CONFIG="+filepath.Join(dir, "config.yaml"), "KOSHACTL_STATE_DIR="+state,
				"KOSHACTL_CONTEXT=", "KOSHACTL_ACTOR=bench@host")
			return db, env, func() { _ = db.Close(); _ = os.RemoveAll(state) }
		}, nil)
	})
	b.Run(fmt.Sprintf("store=moto/overrides=%d", clearAllOnMoto), func(b *testing.B) {
		c := newCounter(b, server)
		dir := b.TempDir()
		round := 0
		var requests, scans, batchGets, tx, txRefused int64
		benchClearAll(b, bin, clearAllOnMoto, func() (controlStore, []string, func()) {
			round++
			name := fmt.Sprintf("clearall-%d", round)
			s := dynamo.NewFromConfig(moto.Config(b, server), name)
			if _, err := s.Init(context.Background()); err != nil {
				b.Fatal(err)
			}
			c.reset()
			return s, clearAllEnv(b, dir, c.url, name), func() {
				requests += c.requests.Load()
				scans += c.op("Scan")
				batchGets += c.op("BatchGetItem") + c.op("BatchGetItem!")
				tx += c.op("TransactWriteItems")
				txRefused += c.op("TransactWriteItems!")
				if _, err := dynamodb.NewFromConfig(moto.Config(b, server)).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name}); err != nil {
					b.Fatal(err)
				}
			}
		}, func(n float64) {
			b.ReportMetric(float64(requests)/n, "requests/op")
			b.ReportMetric(float64(scans)/n, "scans/op")
			b.ReportMetric(float64(batchGets)/n, "batch-gets/op")
			b.ReportMetric(float64(tx)/n, "transactions/op")
			b.ReportMetric(float64(txRefused)/n, "tx-refused/op")
		})
	})
}

// controlStore is what the benchmark loads overrides into and checks.
type controlStore interface {
	store.Transactor
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
}

// benchClearAll times clear --all of n overrides: table gives a new store
// (loaded here, before the command), the environment koshactl runs in on
// it, and what to do once the clears are checked; report, when set, adds
// metrics for the iterations run.
func benchClearAll(b *testing.B, bin string, n int, table func() (controlStore, []string, func()), report func(iterations float64)) {
	var peakKiB int64
	iters := 0
	for b.Loop() {
		b.StopTimer()
		iters++
		s, env, done := table()
		loadOverrides(b, s, n)
		cmd := exec.CommandContext(b.Context(), bin, "breaker", "clear", "--all", "--reason", "bench")
		cmd.Env = env
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		b.StartTimer()
		err := cmd.Run()
		b.StopTimer()
		if err != nil {
			b.Fatalf("clear --all: %v\n%s", err, tail(errOut.String()))
		}
		if got := strings.Count(out.String(), "Cleared override on "); got != n {
			b.Fatalf("clear --all printed %d Cleared lines, want %d\n%s", got, n, tail(errOut.String()))
		}
		peakKiB = max(peakKiB, maxRSSKiB(cmd.ProcessState))
		checkCleared(b, s, n)
		done()
		b.StartTimer()
	}
	b.ReportMetric(float64(peakKiB)/1024, "peak-rss-MiB")
	if report != nil {
		report(float64(iters))
	}
}

// loadOverrides writes n well-formed overrides into s, forced by someone
// else an hour ago for a day, 50 a transaction.
func loadOverrides(b *testing.B, s controlStore, n int) {
	b.Helper()
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for start := 0; start < n; start += 50 {
		token, err := store.NewWriteID()
		if err != nil {
			b.Fatal(err)
		}
		c := store.Change{Token: token}
		for i := start; i < min(start+50, n); i++ {
			o := breaker.Override{Dependency: fmt.Sprintf("dep-%05d", i), State: breaker.OverrideStateForcedOpen, Reason: "bench",
				Actor: "loader@bench", CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour), Version: 1, WriteID: token}
			c.Ops = append(c.Ops, store.PutOp(o.Item(), store.IfAbsent()))
		}
		c.Proof = c.Ops[0].PK()
		if _, err := store.Apply(context.Background(), s, c); err != nil {
			b.Fatal(err)
		}
	}
}

// checkCleared fails b unless s holds no override and exactly one clear
// record for each of the n overrides.
func checkCleared(b *testing.B, s controlStore, n int) {
	b.Helper()
	left, clears := 0, map[string]int{}
	for it, err := range s.Scan(context.Background(), store.ScanQuery{}) {
		if err != nil {
			b.Fatal(err)
		}
		switch {
		case strings.HasPrefix(it.PK(), breaker.OverridePrefix):
			left++
		case strings.HasPrefix(it.PK(), audit.Prefix) && it.Str("action") == breaker.ActionClear:
			clears[it.Str("subject")]++
		}
	}
	if left != 0 || len(clears) != n {
		b.Fatalf("after clear --all: %d overrides left, clear records on %d subjects; want 0 and %d", left, len(clears), n)
	}
	for subject, k := range clears {
		if k != 1 {
			b.Fatalf("%s has %d clear records, want 1", subject, k)
		}
	}
}

// clearAllEnv writes a config whose current context is table at endpoint
// and returns the process environment koshactl runs in.
func clearAllEnv(b *testing.B, dir, endpoint, table string) []string {
	b.Helper()
	cfg := filepath.Join(dir, "config.yaml")
	conf := fmt.Sprintf("current-context: dev\ncontexts:\n  dev:\n    store:\n      dynamodb:\n        table: %s\n"+
		"        region: %s\n        endpoint-url: %s\n        static-credentials: true\n", table, moto.Region, endpoint)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	return append(os.Environ(), "KOSHACTL_CONFIG="+cfg, "KOSHACTL_STATE_DIR="+filepath.Join(dir, "state"), "KOSHACTL_CONTEXT=",
		"KOSHACTL_ACTOR=bench@host", "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
}

// maxRSSKiB is the peak resident set of an ended process, in KiB.
func maxRSSKiB(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss / 1024 // bytes there
	}
	return ru.Maxrss
}

// tail is the end of a long output, for a failure message.
func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
