package audit_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

var t0 = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

func openLog(t *testing.T) (*audit.Log, *clocktest.Fake, store.Store) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktest.NewFake(t0)
	return audit.NewLog(s, clk, "ctx"), clk, s
}

func TestListFiltersAndOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log, clk, _ := openLog(t)
	add := func(action, subject string) {
		t.Helper()
		if _, err := log.Append(ctx, audit.Entry{Actor: "a", Action: action, Subject: subject, Before: map[string]int{"v": 1}}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	add("breaker.force-open", "breaker#openai")
	add("ratelimit.reset", "rl#agent-1")
	add("breaker.clear", "breaker#openai")
	add("ratelimit.drain", "rl#agent-2")

	l, err := log.List(ctx, audit.Query{})
	all := l.Records
	if err != nil || len(all) != 4 || all[0].Action != "ratelimit.drain" || all[3].Action != "breaker.force-open" {
		t.Fatalf("newest first: %+v %v", all, err)
	}
	if all[3].Context != "ctx" || all[3].Outcome != "ok" || string(all[3].Before) != `{"v":1}` {
		t.Errorf("record fields: %+v", all[3])
	}
	cases := []struct {
		q    audit.Query
		want int
	}{
		{audit.Query{Subject: "breaker#openai"}, 2},
		{audit.Query{Subject: "rl#*"}, 2},
		{audit.Query{Action: "breaker.clear"}, 1},
		{audit.Query{Since: t0.Add(2 * time.Minute)}, 2},
		{audit.Query{Limit: 3}, 3},
	}
	for _, tc := range cases {
		got, err := log.List(ctx, tc.q)
		if err != nil || len(got.Records) != tc.want {
			t.Errorf("List(%+v) = %d records (%v), want %d", tc.q, len(got.Records), err, tc.want)
		}
	}
	// Past retention a record is hidden even though the store still holds it.
	clk.Set(t0.Add(audit.Retention + 30*time.Second))
	if got, _ := log.List(ctx, audit.Query{}); len(got.Records) != 3 {
		t.Errorf("after 90 days the oldest record should be hidden: %d left", len(got.Records))
	}
}

func TestRecordsCarryTTLAndAreNeverOverwritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log, _, s := openLog(t)
	rec, err := log.Append(ctx, audit.Entry{Actor: "a", Action: "x", Subject: "y"})
	if err != nil {
		t.Fatal(err)
	}
	var found store.Item
	for it, err := range s.Scan(ctx, store.ScanQuery{Prefix: audit.Prefix}) {
		if err != nil {
			t.Fatal(err)
		}
		found = it
	}
	ttl, _ := found.Int(store.TTLAttr)
	if ttl != t0.Add(audit.Retention).Unix() {
		t.Errorf("ttl = %d, want 90 days after the record", ttl)
	}
	// The write is IfAbsent: a second put of the same key is refused.
	if err := s.Put(ctx, found, store.IfAbsent()); !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("re-put of %s: %v", rec.ID, err)
	}
}

// A store that refuses writes makes Append fail with ErrAuditWrite, so
// commands can say "changed, but not audited".
func TestAppendFailureIsErrAuditWrite(t *testing.T) {
	t.Parallel()
	log := audit.NewLog(failing{}, clocktest.NewFake(t0), "ctx")
	_, err := log.Append(context.Background(), audit.Entry{Actor: "a", Action: "x", Subject: "y"})
	if !errors.Is(err, audit.ErrAuditWrite) || !errors.Is(err, audit.ErrAuditUnknown) || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("err = %v, want an unwritten record whose outcome is unknown", err)
	}
}

type failing struct{ store.Store }

func (failing) Transact(context.Context, store.Change) error {
	return store.ErrUnavailable
}

// Get fails too: an unreachable store cannot be re-read to resolve the put.
func (failing) Get(context.Context, string) (store.Item, error) {
	return nil, store.ErrUnavailable
}

func TestActorSourceIsStampedAndReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log, _, s := openLog(t)
	attested := log.Attest(func(_ context.Context, actor string) audit.ActorSource {
		if actor == "arn:aws:iam::123456789012:user/ops" {
			return audit.ActorSTS
		}
		return ""
	})
	for _, e := range []audit.Entry{
		{Actor: "arn:aws:iam::123456789012:user/ops", Action: "a.verified", Subject: "x"},
		{Actor: "someone-else", Action: "a.unknown", Subject: "x"},
		{Actor: "alice@laptop", ActorSource: audit.ActorUnverified, Action: "a.explicit", Subject: "x"},
	} {
		if _, err := attested.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.Append(ctx, audit.Entry{Actor: "arn:aws:iam::123456789012:user/ops", Action: "a.plain", Subject: "x"}); err != nil {
		t.Fatal(err)
	}
	recs, err := log.List(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]audit.ActorSource{"a.verified": audit.ActorSTS, "a.unknown": "", "a.explicit": audit.ActorUnverified, "a.plain": ""}
	for _, r := range recs.Records {
		if r.ActorSource != want[r.Action] {
			t.Errorf("%s: actor source %q, want %q", r.Action, r.ActorSource, want[r.Action])
		}
	}
	// The stored attribute is the contract's: actor_source, absent when unknown.
	var n int
	for it, err := range s.Scan(ctx, store.ScanQuery{Prefix: audit.Prefix}) {
		if err != nil {
			t.Fatal(err)
		}
		_, has := it["actor_source"]
		if wantHas := want[it.Str("action")] != ""; has != wantHas {
			t.Errorf("%s: actor_source present = %v, want %v", it.Str("action"), has, wantHas)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("scanned %d records, want 4", n)
	}
}

// A drill run's records carry its id in the contract's run_id attribute
// (WithRunID stamps it), and a listing can keep one run's records.
func TestRunIDIsStoredAndFiltered(t *testing.T) {
	ctx := context.Background()
	log, _, s := openLog(t)
	run := audit.WithRunID(log, "0123456789ab")
	for _, e := range []audit.Entry{
		{Actor: "ci", Action: "a.run", Subject: "breaker#openai"},
		{Actor: "ci", Action: "a.other", Subject: "breaker#openai", RunID: "ba9876543210"},
	} {
		if _, err := run.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.Append(ctx, audit.Entry{Actor: "ci", Action: "a.none", Subject: "breaker#openai"}); err != nil {
		t.Fatal(err)
	}
	l, err := log.List(ctx, audit.Query{Subject: "breaker#openai", RunID: "0123456789ab"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Records) != 1 || l.Records[0].Action != "a.run" || l.Records[0].RunID != "0123456789ab" {
		t.Fatalf("records of the run: %+v", l.Records)
	}
	want := map[string]string{"a.run": "0123456789ab", "a.other": "ba9876543210", "a.none": ""}
	for it, err := range s.Scan(ctx, store.ScanQuery{Prefix: audit.Prefix}) {
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := it["run_id"].(string); got != want[it.Str("action")] {
			t.Errorf("%s: run_id %q, want %q", it.Str("action"), got, want[it.Str("action")])
		}
	}
}

// The data plane's records live under their own prefix, the only audit
// keys its role may write, and are listed marked as the data plane's: no
// lever decision can mistake one for an operator's record.
func TestDataPlaneRecordsAreKeptApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log, clk, s := openLog(t)
	dp := audit.NewDataPlaneLog(s, clk, "ctx")
	rec, err := dp.Append(ctx, audit.Entry{Actor: "gateway", Action: "chaos.ignored", Subject: "chaos#j1", Outcome: "ignored"})
	if err != nil || !rec.DataPlane {
		t.Fatalf("data-plane append: %+v, %v", rec, err)
	}
	if _, err := log.Append(ctx, audit.Entry{Actor: "alice", Action: "chaos.sign", Subject: "chaos#j1"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for it, err := range s.Scan(ctx, store.ScanQuery{Prefix: audit.DataPlanePrefix}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if it.Str("actor") != "gateway" {
			t.Errorf("an operator's record is keyed under the data plane's prefix: %v", it)
		}
	}
	if n != 1 {
		t.Errorf("%d items under %s, want the data plane's one", n, audit.DataPlanePrefix)
	}
	l, err := log.List(ctx, audit.Query{Subject: "chaos#j1"})
	if err != nil || len(l.Records) != 2 {
		t.Fatalf("List = %+v, %v; want both records", l.Records, err)
	}
	for _, r := range l.Records {
		if r.DataPlane != (r.Actor == "gateway") {
			t.Errorf("record %+v: DataPlane = %v", r, r.DataPlane)
		}
	}
}

// A before-image too large for a record is kept as its size and SHA-256,
// so the change can still be recorded; a small one is kept whole.
func TestStageSummarisesADocumentTooLargeForARecord(t *testing.T) {
	t.Parallel()
	log, _, _ := openLog(t)
	token, _ := store.NewWriteID()
	huge := map[string]any{"padding": strings.Repeat("x", 405*1024)}
	rec, op, err := log.Stage(context.Background(), audit.Entry{Actor: "a", Action: "breaker.clear", Subject: "breaker#x", Before: huge}, token, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec.Before), `"sha256"`) || op.Put.Validate() != nil {
		t.Errorf("record of a 405 KB before-image: %.120s (valid item: %v); want its summary", rec.Before, op.Put.Validate())
	}
	rec, _, err = log.Stage(context.Background(), audit.Entry{Actor: "a", Action: "breaker.clear", Subject: "breaker#x", Before: map[string]any{"a": 1}}, token, 1)
	if err != nil || string(rec.Before) != `{"a":1}` {
		t.Errorf("a small before-image: %s, %v; want it whole", rec.Before, err)
	}
}

// A record's source (the surface that acted, when not the command line) is
// stored as its own attribute and read back; the CLI's records carry none,
// so records written before it read exactly as they did.
func TestSourceIsStoredAndReadBack(t *testing.T) {
	ctx := context.Background()
	log, _, s := openLog(t)
	if _, err := log.Append(ctx, audit.Entry{Actor: "agent", Action: "request.create", Subject: "request#1", Source: audit.SourceMCP}); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, audit.Entry{Actor: "op", Action: "breaker.clear", Subject: "breaker#openai"}); err != nil {
		t.Fatal(err)
	}
	l, err := log.List(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range l.Records {
		got[r.Action] = r.Source
	}
	if got["request.create"] != "mcp" || got["breaker.clear"] != "" {
		t.Fatalf("sources read back: %v", got)
	}
	for it, err := range s.Scan(ctx, store.ScanQuery{Prefix: audit.Prefix}) {
		if err != nil {
			t.Fatal(err)
		}
		v, present := it["source"]
		if want := it.Str("action") == "request.create"; present != want || (want && v != "mcp") {
			t.Errorf("%s: source attribute %v (present %v)", it.Str("action"), v, present)
		}
	}
}
