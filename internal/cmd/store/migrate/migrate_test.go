package migrate_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// TestMigrateTableOfTodaysInit runs store init, audit list, store migrate
// and breaker list on a table created the way `store init` created it
// before the indexes, holding records written before them.
func TestMigrateTableOfTodaysInit(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	legacy := dynamotest.NewLegacyStore(t, endpoint)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, legacy.Table())
	old := []store.Item{
		{store.PK: "audit#1764600000000#00000000000000a1", "time": int64(1764600000000), "actor": "a", "action": "breaker.clear",
			"subject": "breaker#openai", "context": "dev", "outcome": "ok"},
		{store.PK: "breaker#other-tool", "state": "forced_open", "reason": "r", "actor": "a",
			"created_at": int64(1764600000000), "version": int64(2)},
		// Another writer's record without a subject: the subject index
		// cannot take an empty key, so it is left out of it and reported.
		{store.PK: "audit#1764600000001#00000000000000a2", "time": int64(1764600000001), "actor": "a", "action": "breaker.clear",
			"subject": "", "context": "dev", "outcome": "ok"},
	}
	for _, it := range old {
		if err := legacy.Put(t.Context(), it, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}

	r := e.MustRun(0, "store", "init")
	if !strings.Contains(r.Stdout, "already exists") || !strings.Contains(r.Stdout, "store migrate") {
		t.Errorf("store init on the old table should name the missing indexes and the fix:\n%s", r.Stdout)
	}
	// Readers work meanwhile, by scan, and say so once each.
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "incident", "--for", "30m")
	r = e.MustRun(0, "audit", "list")
	if strings.Count(r.Stderr, "store migrate") != 1 || !strings.Contains(r.Stdout, "breaker.force-open") {
		t.Errorf("audit list on the old table: stdout\n%s\nstderr\n%s", r.Stdout, r.Stderr)
	}
	r = e.MustRun(0, "breaker", "list")
	if strings.Count(r.Stderr, "store migrate") != 1 || !strings.Contains(r.Stdout, "other-tool") || !strings.Contains(r.Stdout, "openai") {
		t.Errorf("breaker list on the old table: stdout\n%s\nstderr\n%s", r.Stdout, r.Stderr)
	}

	r = e.MustRun(0, "store", "migrate", "--dry-run")
	for _, want := range []string{`would add index "audit-by-day"`, `would add index "overrides"`, `would add index "lists"`,
		"audit records: 3 examined, would index 2", "overrides: 2 examined, would index 1",
		`audit records: 1 left out of an index DynamoDB would refuse them in (indexed reads miss them there; --scan reads find them): ` +
			`"audit#1764600000001#00000000000000a2" (ix_audit_subject (the key of index audit-by-subject) is empty)`} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("migrate --dry-run does not say %q:\n%s", want, r.Stdout)
		}
	}
	// -o json speaks snake_case throughout, the backfill reports included
	// (keys compared exactly: encoding/json would match "Examined" too).
	r = e.MustRun(0, "store", "migrate", "--dry-run", "-o", "json")
	var rep map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("migrate -o json: %v\n%s", err, r.Stdout)
	}
	for field, want := range map[string][]string{
		"audit_backfill":    {`"examined":3`, `"updated":2`, `"unindexed":[{"pk":"audit#1764600000001#00000000000000a2","why":`},
		"override_backfill": {`"examined":2`, `"updated":1`, `"skipped":0`},
	} {
		var compact bytes.Buffer
		if err := json.Compact(&compact, rep[field]); err != nil {
			t.Fatalf("migrate -o json %s: %v", field, err)
		}
		for _, w := range want {
			if !strings.Contains(compact.String(), w) {
				t.Errorf("migrate -o json %s lacks %s: %s", field, w, compact.String())
			}
		}
	}
	// migrate adds every index to the existing table, as DynamoDB builds
	// them from its items, and backfills the records.
	r = e.MustRun(0, "store", "migrate")
	for _, want := range []string{`added index "audit-by-day"`, `added index "audit-by-subject"`, `added index "audit-by-actor"`, `added index "overrides"`, `added index "lists"`,
		"audit records: 3 examined, indexed 2", "overrides: 2 examined, indexed 1",
		`"audit#1764600000001#00000000000000a2" (ix_audit_subject (the key of index audit-by-subject) is empty)`} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("migrate does not say %q:\n%s", want, r.Stdout)
		}
	}
	// The readers use the indexes now: no note naming the fix.
	r = e.MustRun(0, "audit", "list")
	if strings.Contains(r.Stderr, "store migrate") || !strings.Contains(r.Stdout, "breaker.force-open") {
		t.Errorf("audit list after migrate: stdout\n%s\nstderr\n%s", r.Stdout, r.Stderr)
	}
	r = e.MustRun(0, "breaker", "list")
	if strings.Contains(r.Stderr, "store migrate") || !strings.Contains(r.Stdout, "other-tool") || !strings.Contains(r.Stdout, "openai") {
		t.Errorf("breaker list after migrate: stdout\n%s\nstderr\n%s", r.Stdout, r.Stderr)
	}
	// The backfill can be left out of a run.
	r = e.MustRun(0, "store", "migrate", "--skip-backfill", "--dry-run")
	if strings.Contains(r.Stdout, "audit records:") {
		t.Errorf("--skip-backfill backfilled:\n%s", r.Stdout)
	}
}

// TestInitCreatesEveryIndex: a table made by store init answers the indexed
// reads without a notice, and migrate finds nothing to do.
func TestInitCreatesEveryIndex(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")
	e.MustRun(0, "store", "init")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "incident", "--for", "30m")
	for _, args := range [][]string{{"audit", "list", "--since", "1h"}, {"breaker", "list"}, {"audit", "list", "--subject", "breaker#openai"}} {
		if r := e.MustRun(0, args...); strings.Contains(r.Stderr, "note:") || !strings.Contains(r.Stdout, "openai") {
			t.Errorf("%v on a new table: stdout\n%s\nstderr\n%s", args, r.Stdout, r.Stderr)
		}
	}
	if r := e.MustRun(0, "audit", "list", "--until", "2026-01-01T00:00:00Z"); !strings.Contains(r.Stdout, "No audit records match") {
		t.Errorf("audit list --until before every record:\n%s", r.Stdout)
	}
	if r := e.MustRun(2, "audit", "list", "--until", "yesterday"); !strings.Contains(r.Stderr, "RFC3339") {
		t.Errorf("a bad --until: %s", r.Stderr)
	}
	r := e.MustRun(0, "store", "migrate")
	if strings.Contains(r.Stdout, "added") || strings.Count(r.Stdout, "already present") != len(store.Indexes) ||
		!strings.Contains(r.Stdout, "would index 0") && !strings.Contains(r.Stdout, "indexed 0") {
		t.Errorf("migrate on a new table:\n%s", r.Stdout)
	}
}
