package breaker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/golden"
)

// TestMalformedOverridesReportTheirProblemsAsBefore decodes override items
// malformed every way the contract names (absent, wrong type, out of
// range; required and optional) and compares every problem, in order and
// word for word, and what was decoded, with testdata/override_problems.golden,
// written by the decoder before it moved to store.Decoder (7846ade).
// go test -update rewrites the golden file.
func TestMalformedOverridesReportTheirProblemsAsBefore(t *testing.T) {
	const ok = int64(1764000000000)
	good := func() store.Item {
		return store.Item{store.PK: "breaker#api", "state": "forced_open", "reason": "r", "actor": "a",
			"created_at": ok, "expires_at": ok + 1000, "version": int64(3)}
	}
	with := func(kv ...any) store.Item { return storetest.With(good(), kv...) }
	cases := []struct {
		name string
		it   store.Item
	}{
		{"well formed", good()},
		{"only a pk", store.Item{store.PK: "breaker#api"}},
		{"bad pk", with(store.PK, "breaker#Bad_Name")},
		{"state wrong", with("state", "open")},
		{"state N", with("state", int64(1))},
		{"reason N", with("reason", int64(5))},
		{"reason BOOL", with("reason", store.Bool(true))},
		{"reason too long", with("reason", strings.Repeat("x", 600))},
		{"actor absent", with("actor", nil)},
		{"actor NULL", with("actor", store.Null{})},
		{"created_at absent", with("created_at", nil)},
		{"created_at S", with("created_at", "2026-01-01")},
		{"created_at fraction", with("created_at", 1.5)},
		{"created_at number text", with("created_at", store.Number("1e3"))},
		{"created_at negative", with("created_at", int64(-1))},
		{"created_at past 9999", with("created_at", int64(253402300800000))},
		{"created_at at 9999", with("created_at", int64(253402300799999))},
		{"expires_at absent", with("expires_at", nil)},
		{"expires_at S", with("expires_at", "soon")},
		{"expires_at negative", with("expires_at", int64(-5))},
		{"version absent", with("version", nil)},
		{"version 0", with("version", int64(0))},
		{"version -2", with("version", int64(-2))},
		{"version 1.5", with("version", 1.5)},
		{"version S", with("version", "3")},
		{"version huge", with("version", 9e125)},
		{"ttl S", with("ttl", "x")},
		{"ttl fraction", with("ttl", 2.5)},
		{"ttl whole", with("ttl", int64(1764000000))},
		{"approval not JSON", with("approval", "{")},
		{"approval no decision", with("approval", `{"policy":"p"}`)},
		{"approval N", with("approval", int64(1))},
		{"everything wrong", store.Item{store.PK: "breaker#X", "state": store.Bool(false), "reason": store.List{}, "actor": int64(1),
			"created_at": "x", "expires_at": 1.25, "version": store.Null{}, "ttl": store.Map{}, "approval": `{"decision":"allow"}`}},
	}
	var b strings.Builder
	for _, c := range cases {
		o, err := breaker.OverrideFromItem(c.it)
		fmt.Fprintf(&b, "== %s\nerr=%v malformed=%t version=%d created=%s expires=%s approval=%v\n", c.name, err, o.Malformed(), o.Version,
			o.CreatedAt.Format("2006-01-02T15:04:05.000Z07:00"), o.ExpiresAt.Format("2006-01-02T15:04:05.000Z07:00"), o.Approval != nil)
		storetest.WriteProblems(&b, o.Problems)
		for _, a := range []string{"pk", "state", "reason", "actor", "created_at", "expires_at", "version", "ttl"} {
			if o.HasProblem(a) {
				fmt.Fprintf(&b, "  has %s\n", a)
			}
		}
	}
	golden.Check(t, "override_problems.golden", b.String())
}
