package breaker_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

var threeDeps = []string{"openai", "core-api", "screening-sim"}

type clearDoc struct {
	Results []struct {
		Dependency        string `json:"dependency"`
		Action            string `json:"action"`
		AuditID           string `json:"audit_id"`
		ConfirmedByReread bool   `json:"confirmed_by_reread"`
	} `json:"results"`
}

// clearRecords counts, per dependency, its breaker.clear records, and
// checks that every audit_id doc gives names one of them.
func clearRecords(t *testing.T, e *clitest.Env, doc clearDoc) map[string]int {
	t.Helper()
	n := map[string]int{}
	ids := map[string]bool{}
	for _, dep := range threeDeps {
		for _, r := range clitest.AuditRecords(t, e, "breaker#"+dep) {
			if r.Action == "breaker.clear" {
				n[dep]++
				ids[r.ID] = true
			}
		}
	}
	for _, r := range doc.Results {
		if r.AuditID != "" && !ids[r.AuditID] {
			t.Errorf("-o json gives %s the audit_id %s, and no such record exists", r.Dependency, r.AuditID)
		}
	}
	return n
}

// stillForced returns which of threeDeps `breaker get` finds.
func stillForced(t *testing.T, e *clitest.Env) []string {
	t.Helper()
	var out []string
	for _, dep := range threeDeps {
		switch r := e.Run("breaker", "get", dep); r.Code {
		case 0:
			out = append(out, dep)
		case exitcode.NotFound:
		default:
			t.Fatalf("breaker get %s: exit %d\n%s", dep, r.Code, r.Stderr)
		}
	}
	return out
}

// `breaker clear openai core-api screening-sim` with the store failing in
// each way a hostile tester would try, as the issue found it (exit 8 with
// one repair command, an audit_id for three records none of which existed,
// exit 5 masking a failed delete): every target is reported for what
// became of it, -o json never names a record that does not exist, and the
// records are exactly the clears that landed (the three go in one
// transaction: all of them or none).
func TestMultiTargetClearWithAFailingStoreReportsEveryTargetTruthfully(t *testing.T) {
	t.Parallel()
	clearArgs := append([]string{"breaker", "clear", "--reason", "recovered", "-o", "json"}, threeDeps...)
	for _, tc := range []struct {
		name string
		// run runs clearArgs with the store failing.
		run      func(t *testing.T, e *clitest.Env, p *faultproxy.Proxy) clitest.Result
		code     int
		stderr   []string
		cleared  []string // the results -o json lists as cleared
		recorded int      // clear records per dependency after
	}{
		{name: "the read fails: nothing sent",
			run: func(t *testing.T, e *clitest.Env, p *faultproxy.Proxy) clitest.Result {
				for n := 1; n <= 3; n++ {
					p.LoseNext("BatchGetItem", n, faultproxy.Reset)
				}
				return e.Run(clearArgs...)
			},
			code: exitcode.Unavailable, stderr: []string{"read overrides"}, recorded: 0},
		{name: "stalled, interrupted, the re-issue stalled too: unknown, and nothing landed",
			run: func(t *testing.T, e *clitest.Env, p *faultproxy.Proxy) clitest.Result {
				return clitest.RunInterrupted(t, e, p, faultproxy.Stall, func() { p.LoseNext(clitest.Transact, 1, faultproxy.Stall) }, clearArgs...)
			},
			code:   exitcode.Unknown,
			stderr: []string{"outcome", "unknown", "3 with an unknown outcome: openai, core-api, screening-sim", "koshactl breaker get"}, recorded: 0},
		{name: "unanswered, and the settling read too: unknown, and all landed",
			run: func(t *testing.T, e *clitest.Env, p *faultproxy.Proxy) clitest.Result {
				clitest.Unreachable(p)
				return e.Run(clearArgs...)
			},
			code:   exitcode.Unknown,
			stderr: []string{"outcome", "unknown", "3 with an unknown outcome: openai, core-api, screening-sim", "koshactl breaker get"}, recorded: 1},
		{name: "the answer lost: confirmed, all landed",
			run: func(t *testing.T, e *clitest.Env, p *faultproxy.Proxy) clitest.Result {
				p.LoseNext(clitest.Transact, 1, faultproxy.Reset)
				return e.Run(clearArgs...)
			},
			code: exitcode.OK, cleared: threeDeps, recorded: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, p := clitest.LostAnswerEnv(t)
			e.MustRun(0, append([]string{"breaker", "force-open", "--reason", "incident", "--for", "30m", "--allow-unknown"}, threeDeps...)...)
			r := tc.run(t, e, p)
			if r.Code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, tc.code, r.Stdout, r.Stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.Stderr)
				}
			}
			if lines := errorLines(r.Stderr); len(lines) > 1 {
				t.Errorf("stderr has %d lines of error, want one:\n%s", len(lines), r.Stderr)
			}
			for _, banned := range []string{"repair", "not audited", "audit record"} {
				if strings.Contains(r.Stderr, banned) {
					t.Errorf("stderr says %q:\n%s", banned, r.Stderr)
				}
			}
			var doc clearDoc
			if r.Stdout != "" {
				doc = clitest.Decode[clearDoc](t, r.Stdout)
			}
			var cleared []string
			for _, res := range doc.Results {
				if res.Action != "cleared" || res.AuditID == "" || !res.ConfirmedByReread {
					t.Errorf("result %+v: want cleared, confirmed, with its record", res)
				}
				cleared = append(cleared, res.Dependency)
			}
			if !slices.Equal(cleared, tc.cleared) {
				t.Errorf("-o json reports %v cleared, want %v\n%s", cleared, tc.cleared, r.Stdout)
			}
			recs := clearRecords(t, e, doc)
			forced := stillForced(t, e)
			for _, dep := range threeDeps {
				if recs[dep] != tc.recorded {
					t.Errorf("%s has %d clear records, want %d", dep, recs[dep], tc.recorded)
				}
			}
			// A clear is recorded exactly when it landed.
			if want := tc.recorded == 0; (len(forced) == len(threeDeps)) != want || (len(forced) == 0) == want {
				t.Errorf("still forced: %v, with %d clear record(s) each", forced, tc.recorded)
			}
		})
	}
}

// A hostile tester with PutItem on audit# plants what an older koshactl
// wrote before a clear, `audit#claim#<write_id>` of the override, saying
// bob's record (which does not exist) recorded its clear, and one whose
// record key walks out of the audit prefix. The next `breaker clear` by
// another operator is not fooled: it clears, writes and names its own
// record, and lists no claim as a record; on both stores.
func TestAPlantedClaimChangesNothingClearReports(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"embedded", "dynamodb"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := clitest.New(t, clitest.Parallel())
			var s interface {
				Get(context.Context, string) (store.Item, error)
				Put(context.Context, store.Item, store.Condition) error
			}
			if backend == "dynamodb" {
				endpoint := moto.Start(t)
				e.UseDynamoDB(endpoint, "kosha-control")
				e.MustRun(0, "store", "init")
				s = dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
			} else {
				e.MustRun(0, "breaker", "list") // creates the store
				db, err := sqlite.Open(context.Background(), filepath.Join(e.StateDir(), "local.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				s = db
			}
			e.Setenv("KOSHACTL_ACTOR", "alice@ops")
			e.MustRun(0, "breaker", "force-open", "openai", "--reason", "incident", "--for", "30m")
			it, err := s.Get(context.Background(), "breaker#openai")
			if err != nil || it.WriteID() == "" {
				t.Fatalf("the override: %v, %v", it, err)
			}
			for pk, record := range map[string]string{
				"audit#claim#" + it.WriteID():               "audit#1795978800000#feedfacefeedface",
				"audit#claim#" + it.WriteID() + "#traverse": "audit#x#zz#../../breaker#openai",
			} {
				if err := s.Put(context.Background(), store.Item{store.PK: pk, "record": record, "actor": "bob@evil", "actor_source": "sts",
					"action": "breaker.clear", "subject": "breaker#openai", "reason": "bob cleared it", "time": clitest.Epoch.UnixMilli()}, store.Always()); err != nil {
					t.Fatal(err)
				}
			}

			e.Setenv("KOSHACTL_ACTOR", "carol@ops")
			table := e.Run("breaker", "clear", "openai", "--reason", "recovered", "--dry-run")
			if table.Code != 0 || !strings.Contains(table.Stdout, "Would clear override on openai set by alice@ops") {
				t.Fatalf("dry run: exit %d\n%s\n%s", table.Code, table.Stdout, table.Stderr)
			}
			r := e.MustRun(0, "breaker", "clear", "openai", "--reason", "recovered", "-o", "json")
			if strings.Contains(r.Stdout+r.Stderr, "bob") || strings.Contains(r.Stdout+r.Stderr, "recorded by") {
				t.Errorf("the clear reports the planted claim:\n%s\n%s", r.Stdout, r.Stderr)
			}
			doc := clitest.Decode[clearDoc](t, r.Stdout)
			if len(doc.Results) != 1 || doc.Results[0].Action != "cleared" || doc.Results[0].AuditID == "" {
				t.Fatalf("results %+v, want openai cleared with its record", doc.Results)
			}
			var clears []clitest.AuditRecord
			for _, rec := range clitest.AuditRecords(t, e, "breaker#openai") {
				if rec.Actor == "bob@evil" {
					t.Errorf("a planted claim is listed as a record: %+v", rec)
				}
				if rec.Action == "breaker.clear" {
					clears = append(clears, rec)
				}
			}
			if len(clears) != 1 || clears[0].ID != doc.Results[0].AuditID || clears[0].Actor != "carol@ops" || clears[0].Reason != "recovered" {
				t.Fatalf("clear records %+v, want exactly carol's, the one -o json names (%s)", clears, doc.Results[0].AuditID)
			}
			e.MustRun(exitcode.NotFound, "breaker", "get", "openai")
			// The claims are left as they were: koshactl neither trusts nor
			// removes another writer's items.
			if got, err := s.Get(context.Background(), "audit#claim#"+it.WriteID()); err != nil || got.Str("actor") != "bob@evil" {
				t.Errorf("the planted claim: %v, %v", got, err)
			}
		})
	}
}
