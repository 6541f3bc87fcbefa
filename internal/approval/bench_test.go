package approval_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// counting counts the requests a store is asked: reads (Get, BatchGet,
// Scan) and transactions, and the checks (ConditionChecks) transactions
// hold.
type counting struct {
	s                  *sqlite.Store
	reads, txs, checks atomic.Int64
	// scans counts the scans among the reads, queries the index queries,
	// yielded the items the queries have handed out so far.
	scans, queries, yielded atomic.Int64
	off                     atomic.Bool
	// beforeTx, when set, runs once before the next transaction (another
	// writer landing between a read and a write).
	beforeTx func()
	// beforeBatch, when set, runs once before the next batch read.
	beforeBatch func()
}

func (c *counting) count(n *atomic.Int64) {
	if !c.off.Load() {
		n.Add(1)
	}
}

func (c *counting) Get(ctx context.Context, pk string) (store.Item, error) {
	c.count(&c.reads)
	return c.s.Get(ctx, pk)
}

func (c *counting) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	if f := c.beforeBatch; f != nil {
		c.beforeBatch = nil
		f()
	}
	c.count(&c.reads)
	return c.s.BatchGet(ctx, pks)
}

func (c *counting) Put(ctx context.Context, it store.Item, cond store.Condition) error {
	c.count(&c.txs)
	return c.s.Put(ctx, it, cond)
}

func (c *counting) Transact(ctx context.Context, ch store.Change) error {
	if f := c.beforeTx; f != nil {
		c.beforeTx = nil
		f()
	}
	c.count(&c.txs)
	for _, op := range ch.Ops {
		if op.IsCheck() {
			c.count(&c.checks)
		}
	}
	return c.s.Transact(ctx, ch)
}

func (c *counting) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	c.count(&c.reads)
	c.count(&c.scans)
	return c.s.Scan(ctx, q)
}

// Query passes an index query on, counted; the store's queries are not
// taken for consistent ones (as DynamoDB's are not): what they list is read
// again by key.
func (c *counting) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	c.count(&c.reads)
	c.count(&c.queries)
	return func(yield func(store.Item, error) bool) {
		for it, err := range c.s.Query(ctx, q) {
			c.yielded.Add(1)
			if !yield(it, err) {
				return
			}
		}
	}
}

var (
	alice = audit.Identity{Actor: "arn:aws:iam::123456789012:user/alice", Source: audit.ActorSTS, UserID: "AIDAALICE"}
	bob   = audit.Identity{Actor: "arn:aws:iam::123456789012:user/bob", Source: audit.ActorSTS, UserID: "AIDABOB"}
)

// fourEyes is a table (embedded store) under docs/policies/four-eyes.cedar.
func fourEyes(tb testing.TB) (*counting, *approval.Service, *audit.Log, *clocktest.Fake) {
	tb.Helper()
	text, err := os.ReadFile("../../docs/policies/four-eyes.cedar")
	if err != nil {
		tb.Fatal(err)
	}
	return onPolicy(tb, "four-eyes.cedar", text)
}

// onPolicy is [fourEyes] with the policy text.
func onPolicy(tb testing.TB, name string, text []byte) (*counting, *approval.Service, *audit.Log, *clocktest.Fake) {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "t.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	c := &counting{s: s}
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	set, err := policy.Parse(approval.PolicySchema(levertest.Specs()), name, text)
	if err != nil {
		tb.Fatal(err)
	}
	log := audit.NewLog(c, clk, "test")
	if _, err := policy.NewPolicies(c, clk, approval.PolicySchema(levertest.Specs())).Set(context.Background(), log, set, audit.Identity{Actor: "admin", Source: audit.ActorUnverified}, name); err != nil {
		tb.Fatal(err)
	}
	return c, approval.NewService(c, clk, leversOn(c, clk, breaker.DurationPolicy{}), "test"), log, clk
}

// table is what the lever kinds need of a store.
type table interface {
	breaker.OverrideStore
	ratelimit.ListStore
}

// leversOn is the lever service of the built-in kinds on s, forces held to
// p.
func leversOn(s table, clk clock.Clock, p breaker.DurationPolicy) *lever.Service {
	return lever.NewService(s, clk, builtin.Kinds(s, clk, builtin.Settings{Overrides: breaker.NewOverrides(s, clk).WithDurations(p)}))
}

// forceChange is alice's force of openai (absent when asked) for 30m.
func forceChange() approval.Change {
	return approval.Change{Action: breaker.ActionForceOpen, Targets: []string{"openai"}, Reason: "provider incident", Params: json.RawMessage(`{"for_seconds":1800}`),
		Before: map[string]json.RawMessage{"openai": json.RawMessage("null")}}
}

// BenchmarkApprove measures what approving a request costs the table:
// one read (the request, its closed marker and the policy in one batch
// read; the approver's identity, established beside it, is no read of the
// table) and one transaction (the lever, its record, the request's status,
// the approver's proof, the closed marker and the checks of the proofs it
// counts and of the policy's proof), whatever else happens; reported as
// reads/op, transactions/op and checks/op. "last-of-two" approves the
// second approval a request needs (the first counted, and checked, too).
func BenchmarkApprove(b *testing.B) {
	for _, bc := range []struct {
		name   string
		needed int
	}{{"one-approval", 1}, {"last-of-two", 2}} {
		b.Run(bc.name, func(b *testing.B) {
			c, svc, log, _ := fourEyes(b)
			if bc.needed == 2 {
				setPolicy(b, c, log, twoEyes)
			}
			ctx := context.Background()
			var reads, txs, checks int64
			for b.Loop() {
				c.off.Store(true)
				r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice,
					Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: bc.needed}})
				if err != nil {
					b.Fatal(err)
				}
				if bc.needed == 2 {
					if _, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, Approver: carol, SHA256: r.SHA256}); err != nil {
						b.Fatal(err)
					}
				}
				c.reads.Store(0)
				c.txs.Store(0)
				c.checks.Store(0)
				c.off.Store(false)
				res, err := svc.Approve(ctx, log, approval.Approval{ID: r.ID, SHA256: r.SHA256,
					Identify: func(context.Context) (audit.Identity, error) { return bob, nil }})
				if err != nil || !res.Applied {
					b.Fatalf("approve: %+v %v", res, err)
				}
				reads += c.reads.Load()
				txs += c.txs.Load()
				checks += c.checks.Load()
				// Clear for the next round, uncounted.
				c.off.Store(true)
				clear := breaker.Clear("next round", "openai")
				clear.Actor = "admin"
				if _, err := leversOn(c, nil, breaker.DurationPolicy{}).WithLog(log).Change(ctx, clear); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(txs)/float64(b.N), "transactions/op")
			b.ReportMetric(float64(checks)/float64(b.N), "checks/op")
		})
	}
}

// twoEyes asks two approvals of every force.
const twoEyes = `@id("two-eyes")
@approvals("2")
permit (principal, action == Kosha::Action::"breaker.force-open", resource)
when { context.approvals >= 2 };
`

// setPolicy sets text as c's table's policy, uncounted.
func setPolicy(tb testing.TB, c *counting, log *audit.Log, text string) {
	tb.Helper()
	set, err := policy.Parse(approval.PolicySchema(levertest.Specs()), "policy.cedar", []byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	c.off.Store(true)
	defer c.off.Store(false)
	if _, err := policy.NewPolicies(c, nil, approval.PolicySchema(levertest.Specs())).Set(context.Background(), log, set, audit.Identity{Actor: "admin", Source: audit.ActorUnverified}, "bench"); err != nil {
		tb.Fatal(err)
	}
}
