package breaker_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// attr is a raw DynamoDB attribute: type letter and text.
type attr = storetest.Attr

// hostileOverrides are the corrupt override items, each a change to
// the contract's worked example (forced at the test epoch for 30 minutes).
var hostileOverrides = []struct {
	name   string
	change map[string]attr // an empty type removes the attribute
	attr   string          // the attribute reported
	found  string          // what the report says was there
	expiry string          // the EXPIRES column of breaker list
}{
	{"version missing", map[string]attr{"version": {}}, "version", "found absent", "2026-11-29T19:30:00Z"},
	{"version 1.5", map[string]attr{"version": {Type: "N", Text: "1.5"}}, "version", "found N 1.5", "2026-11-29T19:30:00Z"},
	{"version 9e125", map[string]attr{"version": {Type: "N", Text: "9e125"}}, "version", "found N 9e+125", "2026-11-29T19:30:00Z"},
	{"version of type S", map[string]attr{"version": {Type: "S", Text: "1"}}, "version", `found S "1"`, "2026-11-29T19:30:00Z"},
	{"version with 21 digits", map[string]attr{"version": {Type: "N", Text: "1.00000000000000000001"}}, "version", "found N 1.00000000000000000001", "2026-11-29T19:30:00Z"},
	{"expires_at tomorrow", map[string]attr{"expires_at": {Type: "S", Text: "tomorrow"}}, "expires_at", `found S "tomorrow"`, "unreadable (held until cleared)"},
	{"expires_at 1e20", map[string]attr{"expires_at": {Type: "N", Text: "1e20"}}, "expires_at", "found N 1e+20", "unreadable (held until cleared)"},
	{"created_at 1e20", map[string]attr{"created_at": {Type: "N", Text: "1e20"}}, "created_at", "found N 1e+20", "2026-11-29T19:30:00Z"},
	// Of a type beyond S and N (issue 21).
	{"version of type BOOL", map[string]attr{"version": {Type: "BOOL", Text: "true"}}, "version", "found BOOL true", "2026-11-29T19:30:00Z"},
	{"version of type M", map[string]attr{"version": {Type: "M", Text: `{"n":{"N":"1"}}`}}, "version", "found M (1 attribute)", "2026-11-29T19:30:00Z"},
	{"expires_at of type L", map[string]attr{"expires_at": {Type: "L", Text: `[{"N":"1795980600000"}]`}}, "expires_at", "found L (1 element)", "unreadable (held until cleared)"},
}

func hostileItem(change map[string]attr) map[string]attr {
	attrs := map[string]attr{
		"pk": {Type: "S", Text: "breaker#openai"}, "state": {Type: "S", Text: "forced_open"}, "reason": {Type: "S", Text: "provider incident"},
		"actor": {Type: "S", Text: "alice@laptop"}, "created_at": {Type: "N", Text: "1795978800000"}, "expires_at": {Type: "N", Text: "1795980600000"},
		"ttl": {Type: "N", Text: "1795980600"}, "version": {Type: "N", Text: "1"},
	}
	for k, v := range change {
		if v.Type == "" {
			delete(attrs, k)
		} else {
			attrs[k] = v
		}
	}
	return attrs
}

func TestMalformedOverridesLocalContext(t *testing.T) {
	t.Parallel()
	testHostileOverrides(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) {
		e.MustRun(0, "config", "set-context", "dev", "--local", "--dependencies", hostileDependencies(), "--use")
		return e.PutRaw
	})
}

// One table for every case, each case on a dependency of its own: creating
// a table is most of the cost of a case.
func TestMalformedOverridesDynamoDBContext(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	client := dynamodb.NewFromConfig(moto.Config(t, endpoint))
	admin := clitest.New(t, clitest.Parallel())
	admin.UseDynamoDB(endpoint, "hostile")
	admin.MustRun(0, "store", "init")
	testHostileOverrides(t, func(t *testing.T, e *clitest.Env) func(map[string]attr) {
		e.UseDynamoDB(endpoint, "hostile", "--dependencies", hostileDependencies())
		return func(attrs map[string]attr) { storetest.PutRawDynamoDB(t, client, "hostile", attrs) }
	})
}

// testHostileOverrides runs each case in parallel on a dependency of its
// own (openai-01, openai-02, ...), so the cases can share one table: every
// check reads that dependency's item, row and audit records. setup makes
// them the context's known dependencies: list finds an item written without
// the index attribute when it belongs to one.
func testHostileOverrides(t *testing.T, setup func(t *testing.T, e *clitest.Env) func(map[string]attr)) {
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := range hostileOverrides {
			fmt.Fprintf(w, "kosha_breaker_state{dependency=\"%s\",instance=\"gw-1\"} 3\n", hostileDependency(i))
		}
	}))
	t.Cleanup(metrics.Close)
	for i, tc := range hostileOverrides {
		dep := hostileDependency(i)
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := clitest.New(t, clitest.Parallel())
			write := setup(t, e)
			attrs := hostileItem(tc.change)
			attrs["pk"] = attr{Type: "S", Text: "breaker#" + dep}
			write(attrs)
			warning := "warning: breaker#" + dep + ": " + tc.attr + ": " + tc.found + ", want "

			// list: shown as the data plane reads it, flagged, exit 10.
			r := e.MustRun(exitcode.Partial, "breaker", "list")
			if row := rowOf(r.Stdout, dep); !strings.Contains(row, "forced_open (malformed)") || !strings.Contains(row, tc.expiry) {
				t.Errorf("list does not show the item in force, flagged, expiring %q:\n%s", tc.expiry, r.Stdout)
			}
			if !strings.Contains(r.Stderr, warning) || !strings.Contains(r.Stderr, "breaker clear") {
				t.Errorf("list stderr lacks %q and the repair:\n%s", warning, r.Stderr)
			}
			for _, bad := range []string{"292275055", "never"} {
				if strings.Contains(r.Stdout, bad) {
					t.Errorf("list shows %q:\n%s", bad, r.Stdout)
				}
			}
			list := clitest.Decode[struct {
				Items []struct {
					Dependency string          `json:"dependency"`
					Active     bool            `json:"active"`
					Malformed  []store.Problem `json:"malformed"`
				} `json:"items"`
				Unreadable []store.Problem `json:"unreadable"`
			}](t, e.MustRun(exitcode.Partial, "breaker", "list", "-o", "json").Stdout)
			var mine []struct {
				Dependency string          `json:"dependency"`
				Active     bool            `json:"active"`
				Malformed  []store.Problem `json:"malformed"`
			}
			for _, it := range list.Items {
				if it.Dependency == dep {
					mine = append(mine, it)
				}
			}
			var unreadable []store.Problem
			for _, p := range list.Unreadable {
				if p.PK == "breaker#"+dep {
					unreadable = append(unreadable, p)
				}
			}
			if len(mine) != 1 || !mine[0].Active || len(mine[0].Malformed) != 1 ||
				mine[0].Malformed[0].Attribute != tc.attr || !reflect.DeepEqual(unreadable, mine[0].Malformed) {
				t.Errorf("list -o json = %+v", list)
			}

			// get and status say the same.
			r = e.MustRun(0, "breaker", "get", dep)
			if !strings.Contains(r.Stdout, "Malformed:") || !strings.Contains(r.Stdout, tc.attr+": "+tc.found) || strings.Contains(r.Stdout, "292275055") {
				t.Errorf("get:\n%s", r.Stdout)
			}
			r = e.MustRun(0, "breaker", "status", "--metrics-url", metrics.URL+"/metrics")
			if !strings.Contains(r.Stdout, "malformed item, ") || !strings.Contains(r.Stdout, "note: "+dep+": malformed override item ("+tc.attr+": "+tc.found) {
				t.Errorf("status:\n%s", r.Stdout)
			}

			// Without --overwrite it is held by someone: the conflict says the item is malformed.
			r = e.MustRun(exitcode.Conflict, "breaker", "force-open", dep, "--reason", "fix", "--for", "10m")
			if !strings.Contains(r.Stderr, "the item is malformed ("+tc.attr+": "+tc.found) || strings.Contains(r.Stderr, "changed while") {
				t.Errorf("conflict: %s", r.Stderr)
			}
			// The CLI's hint names its flag and command, once.
			if !strings.Contains(r.Stderr, ": pass --overwrite to replace it, or remove it with koshactl breaker clear openai") ||
				strings.Count(r.Stderr, "--overwrite") != 1 {
				t.Errorf("conflict hint: %s", r.Stderr)
			}
			// force-open --overwrite replaces it in one command.
			r = e.MustRun(0, "breaker", "force-open", dep, "--reason", "fix", "--for", "10m", "--overwrite")
			if !strings.Contains(r.Stdout, "replaced a malformed item ("+tc.attr+": "+tc.found) {
				t.Errorf("force-open --overwrite: %s", r.Stdout)
			}
			got := clitest.Decode[view](t, e.MustRun(0, "breaker", "get", dep, "-o", "json").Stdout)
			if got.Reason != "fix" || got.Version < 1 {
				t.Errorf("after --overwrite: %+v", got)
			}
			// clear removes it in one command.
			write(attrs)
			r = e.MustRun(0, "breaker", "clear", dep)
			if !strings.Contains(r.Stdout, "Cleared override on "+dep+" set by alice@laptop (a malformed item, removed as it was stored)") {
				t.Errorf("clear: %s", r.Stdout)
			}
			e.MustRun(exitcode.NotFound, "breaker", "get", dep)

			// Both audit records keep the item as it was stored.
			recs := clitest.Decode[struct {
				Items []struct {
					Action string          `json:"action"`
					Before json.RawMessage `json:"before"`
				} `json:"items"`
				Unreadable []store.Problem `json:"unreadable"`
			}](t, e.MustRun(0, "audit", "list", "--subject", "breaker#"+dep, "-o", "json").Stdout)
			if len(recs.Items) != 2 || len(recs.Unreadable) != 0 {
				t.Fatalf("audit: %+v", recs)
			}
			want := map[string]any{}
			for k, v := range attrs {
				if k == "pk" {
					continue
				}
				text := v.Text
				switch v.Type {
				case "S":
					want[k] = v.Text
					continue
				case "N":
				default: // DynamoDB's JSON notation
					text = fmt.Sprintf("{%q:%s}", v.Type, v.Text)
				}
				var doc any
				if err := json.Unmarshal([]byte(text), &doc); err != nil {
					t.Fatal(err)
				}
				want[k] = doc
			}
			for _, rec := range recs.Items {
				var before map[string]any
				if err := json.Unmarshal(rec.Before, &before); err != nil || !reflect.DeepEqual(before, want) {
					t.Errorf("%s before = %s (%v), want the stored attributes %v", rec.Action, rec.Before, err, want)
				}
			}
		})
	}
}

// hostileDependency is the dependency of hostileOverrides[i].
func hostileDependency(i int) string { return fmt.Sprintf("openai-%02d", i+1) }

// hostileDependencies is every case's dependency, comma-separated.
func hostileDependencies() string {
	deps := make([]string, len(hostileOverrides))
	for i := range deps {
		deps[i] = hostileDependency(i)
	}
	return strings.Join(deps, ",")
}

// rowOf returns the line of a table that names dep, empty if none does.
func rowOf(table, dep string) string {
	for line := range strings.Lines(table) {
		if slices.Contains(strings.Fields(line), dep) {
			return line
		}
	}
	return ""
}
