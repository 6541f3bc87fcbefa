package audit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

var endpoint string

func TestMain(m *testing.M) { moto.RunMain(m, &endpoint) }

// backends opens an empty store of each kind, with every index.
func backends(t *testing.T) map[string]store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return map[string]store.Store{"sqlite": s, "dynamo": dynamotest.NewStore(t, endpoint)}
}

// history writes n records an hour apart ending at t0, alternating two
// subjects and two actors, and returns the log at t0.
func history(t *testing.T, s store.Store, n int) *audit.Log {
	t.Helper()
	clk := clocktest.NewFake(t0.Add(-time.Duration(n-1) * time.Hour))
	for i := range n {
		log := audit.NewLog(s, clk, "ctx")
		_, err := log.Append(t.Context(), audit.Entry{Actor: fmt.Sprintf("actor-%d", i%2), Action: "breaker.force-open",
			Subject: fmt.Sprintf("breaker#dep-%d", i%2), Reason: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		if i < n-1 {
			clk.Advance(time.Hour)
		}
	}
	return audit.NewLog(s, clk, "ctx")
}

func reasons(recs []audit.Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Reason)
	}
	return strings.Join(out, ",")
}

func TestListReadsOnlyTheWindow(t *testing.T) {
	t.Parallel()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			// 60 records over 60 hours: three UTC days (20 on the 29th up
			// to t0, 24 on the 28th, 16 on the 27th).
			log := history(t, s, 60)
			for _, tc := range []struct {
				name     string
				q        audit.Query
				want     string
				shown    int
				examined int64
			}{
				{"since 3h", audit.Query{Since: t0.Add(-150 * time.Minute)}, "59,58,57", 3, 3},
				{"since and until", audit.Query{Since: t0.Add(-10 * time.Hour), Until: t0.Add(-7 * time.Hour)}, "51,50,49", 3, 3},
				// The lists index: each of its partitions is asked for the
				// limit, in one round, whatever the days, so a listing
				// examines up to ListShards times the limit (a negative
				// examined is that bound: the ids pick the partitions).
				{"until across midnight", audit.Query{Until: t0.Add(-18 * time.Hour), Limit: 4}, "40,39,38,37", 4, -4 * audit.ListShards},
				{"limit over days", audit.Query{Limit: 25}, "", 25, -25 * audit.ListShards},
				{"limit within the newest day", audit.Query{Limit: 12}, "", 12, -12 * audit.ListShards},
				{"subject", audit.Query{Subject: "breaker#dep-1", Limit: 3}, "59,57,55", 3, 3},
				{"actor", audit.Query{Actor: "actor-0", Limit: 2}, "58,56", 2, 2},
				{"subject since", audit.Query{Subject: "breaker#dep-0", Since: t0.Add(-5 * time.Hour)}, "58,56,54", 3, 3},
			} {
				t.Run(tc.name, func(t *testing.T) {
					var stats store.ReadStats
					tc.q.Stats = &stats
					listing, err := log.List(t.Context(), tc.q)
					recs := listing.Records
					if err != nil {
						t.Fatal(err)
					}
					if tc.want != "" && reasons(recs) != tc.want {
						t.Errorf("List(%s) = %s, want %s", tc.name, reasons(recs), tc.want)
					}
					if len(recs) != tc.shown {
						t.Errorf("List(%s) returned %d records, want %d", tc.name, len(recs), tc.shown)
					}
					switch ex := stats.Examined(); {
					case tc.examined < 0 && (ex < int64(tc.shown) || ex > -tc.examined):
						t.Errorf("List(%s) examined %d items, want %d to %d", tc.name, ex, tc.shown, -tc.examined)
					case tc.examined >= 0 && ex != tc.examined:
						t.Errorf("List(%s) examined %d items, want %d", tc.name, ex, tc.examined)
					}
				})
			}
		})
	}
}

// TestListFallsBackToScanOnce lists from a table created before the
// indexes: the records are found by a scan and the missing index is
// reported once, with the fix.
func TestListFallsBackToScanOnce(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewLegacyStore(t, endpoint)
	log := history(t, s, 5)
	var notices []string
	log.SetNotice(func(msg string) { notices = append(notices, msg) })
	for range 2 {
		listing, err := log.List(t.Context(), audit.Query{Limit: 2})
		recs := listing.Records
		if err != nil {
			t.Fatal(err)
		}
		if reasons(recs) != "4,3" {
			t.Errorf("List on a legacy table = %s, want 4,3", reasons(recs))
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "store migrate") {
		t.Errorf("notices = %q, want one naming `koshactl store migrate`", notices)
	}
}

// TestBackfillIndexesOldRecords writes records as koshactl did before the
// indexes, on a table without them, adds the indexes (store migrate),
// backfills the records, and finds them through the index.
func TestBackfillIndexesOldRecords(t *testing.T) {
	t.Parallel()
	lite, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lite.Close() })
	// The DynamoDB table is one from before the indexes: the record with a
	// pk too long for an index's sort key can be written there (moto refuses
	// it once an index has pk as its sort key, even for an item in no index).
	legacy := dynamotest.NewLegacyStore(t, endpoint)
	for name, s := range map[string]store.Store{"sqlite": lite, "dynamo": legacy} {
		t.Run(name, func(t *testing.T) {
			for i := range 7 {
				ms := t0.Add(-time.Duration(i) * time.Hour).UnixMilli()
				old := store.Item{store.PK: fmt.Sprintf("audit#%013d#%016x", ms, i), "time": ms, "actor": "a",
					"action": "ratelimit.reset", "subject": "rl#c", "context": "ctx", "outcome": "ok", "reason": fmt.Sprint(i)}
				if err := s.Put(t.Context(), old, store.IfAbsent()); err != nil {
					t.Fatal(err)
				}
			}
			// A record whose pk is longer than an index's sort key may be
			// (another writer's): skipped and reported, not an abort.
			ms := t0.UnixMilli()
			long := store.Item{store.PK: fmt.Sprintf("audit#%013d#", ms) + strings.Repeat("f", store.MaxIndexedPKBytes), "time": ms, "actor": "a",
				"action": "ratelimit.reset", "subject": "rl#other", "context": "ctx", "outcome": "ok", "reason": "long"}
			if err := s.Put(t.Context(), long, store.IfAbsent()); err != nil {
				t.Fatal(err)
			}
			// Records whose subject is empty and whose actor is longer than an
			// index's partition key may be (another writer's): indexed by day,
			// left out of the subject and actor indexes, and reported.
			noSubject := store.Item{store.PK: fmt.Sprintf("audit#%013d#%016x", ms, 100), "time": ms, "actor": "a",
				"action": "ratelimit.reset", "subject": "", "context": "ctx", "outcome": "ok", "reason": "no subject"}
			longActor := store.Item{store.PK: fmt.Sprintf("audit#%013d#%016x", ms, 101), "time": ms, "actor": strings.Repeat("a", store.MaxIndexKeyBytes+1),
				"action": "ratelimit.reset", "subject": "rl#c", "context": "ctx", "outcome": "ok", "reason": "long actor"}
			for _, it := range []store.Item{noSubject, longActor} {
				if err := s.Put(t.Context(), it, store.IfAbsent()); err != nil {
					t.Fatal(err)
				}
			}
			if d, ok := s.(*dynamo.Store); ok {
				if _, err := d.Migrate(t.Context(), false); err != nil {
					t.Fatalf("store migrate: %v", err)
				}
			}
			log := audit.NewLog(s, clocktest.NewFake(t0), "ctx")
			byIndex := func() string {
				var stats store.ReadStats
				listing, err := log.List(t.Context(), audit.Query{Subject: "rl#c", Stats: &stats})
				recs := listing.Records
				if err != nil {
					t.Fatal(err)
				}
				return reasons(recs)
			}
			if got := byIndex(); got != "" {
				t.Fatalf("old records found by the subject index before the backfill: %s", got)
			}
			// unindexed renders a report's left-out records in pk order.
			unindexed := func(rep audit.BackfillReport) string {
				var out []string
				for _, u := range rep.Unindexed {
					out = append(out, u.PK[len(u.PK)-3:]+": "+u.Why)
				}
				slices.Sort(out)
				return strings.Join(out, "\n")
			}
			wantLeft := strings.Join([]string{
				"064: ix_audit_subject (the key of index audit-by-subject) is empty",
				"065: ix_audit_actor (the key of index audit-by-actor) is 2049 bytes, more than 2048",
				"fff: ix_list_sort (the sort key of index lists) is 1038 bytes, more than 1024",
				"fff: pk is 1044 bytes, more than the 1024 an item in index audit-by-day may have (its sort key)",
			}, "\n")
			dry, err := log.Backfill(t.Context(), true, nil, nil)
			if err != nil || dry.Examined != 10 || dry.Updated != 9 || unindexed(dry) != wantLeft {
				t.Fatalf("dry run: %+v, %v; want 10 examined, 9 to update, left out:\n%s", dry, err, wantLeft)
			}
			if got := byIndex(); got != "" {
				t.Fatalf("the dry run wrote: %s", got)
			}
			rep, err := log.Backfill(t.Context(), false, nil, nil)
			if err != nil || rep.Updated != 9 || unindexed(rep) != wantLeft {
				t.Fatalf("backfill: %+v, %v; want 9 indexed, left out:\n%s", rep, err, wantLeft)
			}
			if l, err := log.List(t.Context(), audit.Query{Limit: 3}); err != nil || reasons(l.Records) != "long actor,no subject,0" {
				t.Errorf("the newest records after the backfill: %q, %v; want the two of t0 the lists index takes, then 0", reasons(l.Records), err)
			}
			if got := byIndex(); got != "long actor,0,1,2,3,4,5,6" {
				t.Errorf("after the backfill the subject index finds %q", got)
			}
			listing, err := log.List(t.Context(), audit.Query{Actor: "a"})
			if err != nil || !strings.Contains(reasons(listing.Records), "no subject") {
				t.Errorf("the actor index after the backfill: %q, %v; want the record without a subject", reasons(listing.Records), err)
			}
			again, err := log.Backfill(t.Context(), false, nil, nil)
			if err != nil || again.Updated != 0 || unindexed(again) != wantLeft {
				t.Errorf("second backfill: %+v, %v; want nothing to do, the same left out", again, err)
			}
		})
	}
}

// TestListShowsRecordsFromAClockAhead: another operator's clock runs a
// minute ahead, across midnight; an open-ended listing still shows them.
func TestListShowsRecordsFromAClockAhead(t *testing.T) {
	t.Parallel()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			midnight := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			ahead := audit.NewLog(s, clocktest.NewFake(midnight.Add(30*time.Second)), "ctx")
			if _, err := ahead.Append(t.Context(), audit.Entry{Actor: "b", Action: "breaker.clear", Subject: "breaker#x", Reason: "ahead"}); err != nil {
				t.Fatal(err)
			}
			listing, err := audit.NewLog(s, clocktest.NewFake(midnight.Add(-30*time.Second)), "ctx").List(t.Context(), audit.Query{Since: midnight.Add(-time.Hour)})
			recs := listing.Records
			if err != nil || reasons(recs) != "ahead" {
				t.Errorf("List = %q, %v; want the record stamped a minute ahead", reasons(recs), err)
			}
		})
	}
}

// A run's records on a subject, read through the subject index on both
// backends: the run filter applies after the index, so a limit does not
// cut it short.
func TestListKeepsOneRunsRecordsOnASubject(t *testing.T) {
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			clk := clocktest.NewFake(t0)
			log := audit.NewLog(s, clk, "ctx")
			for i, run := range []string{"aaaaaaaaaaaa", "", "bbbbbbbbbbbb", "aaaaaaaaaaaa", ""} {
				if _, err := audit.WithRunID(log, run).Append(t.Context(), audit.Entry{Actor: "ci", Action: "breaker.force-open",
					Subject: "breaker#openai", Reason: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Second)
			}
			l, err := log.List(t.Context(), audit.Query{Subject: "breaker#openai", RunID: "aaaaaaaaaaaa", Since: t0, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if got := reasons(l.Records); got != "3,0" {
				t.Errorf("records of run aaaaaaaaaaaa: %q, want \"3,0\"", got)
			}
		})
	}
}

// Keep narrows a listing by a rule the indexes cannot answer (audit list
// --unapproved): its Limit counts the records kept, so the store is never
// asked for only Limit items, which the rule could all leave out.
func TestListLimitCountsTheRecordsKeepKeeps(t *testing.T) {
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			log := history(t, s, 6)
			keep := func(r audit.Record) bool { return r.Reason == "1" || r.Reason == "2" }
			for _, q := range []audit.Query{
				{Keep: keep, Limit: 2},
				{Keep: keep, Limit: 2, Subject: "breaker#dep-*"},
				{Keep: keep, Limit: 1, Actor: "actor-1"},
			} {
				l, err := log.List(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				want := "2,1"
				if q.Actor != "" {
					want = "1"
				}
				if got := reasons(l.Records); got != want {
					t.Errorf("List(%+v) kept %q, want %q", q, got, want)
				}
			}
		})
	}
}

// A claim item an older koshactl wrote beside a clear (audit#claim#) is no
// record, whatever attributes it carries: planted with the indexes'
// attributes, a clear by alice, it is listed by no read (by day, subject,
// actor, or a scan).
func TestPlantedClaimIsNoRecord(t *testing.T) {
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			log := history(t, s, 2)
			planted := store.Item{store.PK: "audit#claim#" + fmt.Sprintf("%013d", t0.UnixMilli()) + "#planted", "time": t0.UnixMilli(),
				"actor": "arn:aws:iam::123456789012:user/alice", "action": "breaker.clear", "subject": "breaker#dep-1", "context": "ctx",
				"outcome": "ok", "reason": "planted", "ix_audit_day": t0.UTC().Format(audit.DayLayout), "ix_audit_subject": "breaker#dep-1",
				"ix_audit_actor":      "arn:aws:iam::123456789012:user/alice",
				store.IndexLists.Attr: audit.Prefix + "0", store.IndexLists.Sort: fmt.Sprintf("%013d#planted", t0.UnixMilli())}
			if err := s.Put(t.Context(), planted, store.IfAbsent()); err != nil {
				t.Fatal(err)
			}
			for _, q := range []audit.Query{{}, {Subject: "breaker#dep-1"}, {Actor: "arn:aws:iam::123456789012:user/alice"}, {Scan: true},
				{Action: "breaker.clear"}} {
				l, err := log.List(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(reasons(l.Records), "planted") || len(l.Unreadable) > 0 {
					t.Errorf("query %+v listed the claim: %+v, unreadable %v", q, l.Records, l.Unreadable)
				}
			}
		})
	}
}

// mixedLog writes records of the three kinds a listing shows, a second
// apart, their kinds interleaved in time: the operators' (audit#), the data
// plane's (audit#dp#) and requests' (audit#rq#), whose pks sort apart
// whatever their times. The reasons count up from 0, oldest first; every
// third is about request#r1 (asked, then decided, then asked...).
func mixedLog(t *testing.T, s store.Store, n int) *audit.Log {
	t.Helper()
	clk := clocktest.NewFake(t0.Add(-time.Duration(n) * time.Second))
	for i := range n {
		log := audit.NewLog(s, clk, "ctx")
		subject := fmt.Sprintf("breaker#dep-%d", i)
		switch i % 3 {
		case 1:
			log = audit.NewDataPlaneLog(s, clk, "ctx")
		case 2:
			log = audit.NewRequestLog(s, clk, "ctx")
			subject = "request#r1"
		}
		if i%6 == 0 {
			subject = "request#r1"
		}
		if _, err := log.Append(t.Context(), audit.Entry{Actor: "a", Action: "x", Subject: subject, Reason: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	return audit.NewLog(s, clk, "ctx")
}

// A listing shows the newest records by time whatever their kind: a limit
// is never filled by the records whose pks sort last (the data plane's and
// requests', on an index sorted by pk), the default listing, a window and
// a subject alike.
func TestListInterleavesRecordKindsByTime(t *testing.T) {
	t.Parallel()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			log := mixedLog(t, s, 30)
			for _, tc := range []struct {
				name string
				q    audit.Query
				want string
			}{
				{"newest", audit.Query{Limit: 4}, "29,28,27,26"},
				{"until", audit.Query{Until: t0.Add(-5 * time.Second), Limit: 3}, "24,23,22"},
				{"since", audit.Query{Since: t0.Add(-3 * time.Second)}, "29,28,27"},
				{"subject", audit.Query{Subject: "request#r1", Limit: 3}, "29,26,24"},
			} {
				l, err := log.List(t.Context(), tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if got := reasons(l.Records); got != tc.want {
					t.Errorf("%s: List = %s, want %s", tc.name, got, tc.want)
				}
			}
		})
	}
}

// A table made before the lists index (by an earlier store init, or a
// stack at IndexCount=4) is read by day, newest first by time with every
// record kind, and the missing index said once with the fix; `store
// migrate` adds it and indexes the records, after which the listing reads
// it in one round.
func TestListReadsByDayUntilTheListsIndex(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewStoreWithIndexes(t, endpoint, len(store.Indexes)-1)
	log := mixedLog(t, s, 30)
	// The records as a koshactl before the lists index wrote them.
	for it, err := range s.Scan(t.Context(), store.ScanQuery{Prefix: audit.Prefix}) {
		if err != nil {
			t.Fatal(err)
		}
		delete(it, store.IndexLists.Attr)
		delete(it, store.IndexLists.Sort)
		if err := s.Put(t.Context(), it, store.Always()); err != nil {
			t.Fatal(err)
		}
	}
	var notices []string
	log.SetNotice(func(msg string) { notices = append(notices, msg) })
	for range 2 {
		l, err := log.List(t.Context(), audit.Query{Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if got := reasons(l.Records); got != "29,28,27,26" {
			t.Errorf("List by day = %s, want 29,28,27,26", got)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "store migrate") || !strings.Contains(notices[0], "by day") {
		t.Errorf("notices = %q, want one naming `koshactl store migrate` and the day index", notices)
	}
	if _, err := s.Migrate(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if rep, err := log.Backfill(t.Context(), false, nil, nil); err != nil || rep.Updated != 30 {
		t.Fatalf("backfill = %+v, %v; want the 30 records indexed", rep, err)
	}
	var stats store.ReadStats
	l, err := log.List(t.Context(), audit.Query{Limit: 4, Stats: &stats})
	if err != nil || reasons(l.Records) != "29,28,27,26" || stats.Requests() != audit.ListShards {
		t.Errorf("List after migrate = %s, %v in %d requests; want 29,28,27,26 in %d", reasons(l.Records), err, stats.Requests(), audit.ListShards)
	}
}
