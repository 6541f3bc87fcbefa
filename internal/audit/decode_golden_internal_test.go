package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/golden"
)

// TestMalformedRecordsReportTheirProblemsAsBefore decodes audit record
// items malformed every way docs/contracts/audit-record.md names (pk,
// time absent, wrong type or out of range, required and optional strings,
// documents that are not JSON or not what they claim) and compares every
// problem, in order and word for word, and whether the record lists, with
// testdata/record_problems.golden, written by the decoder before it moved
// to store.Decoder (7846ade). go test -update rewrites it.
func TestMalformedRecordsReportTheirProblemsAsBefore(t *testing.T) {
	const ok = int64(1764000000000)
	good := func() store.Item {
		return store.Item{store.PK: "audit#1764000000000#abc", attrTime: ok, "actor": "a", "action": "breaker.force-open",
			"subject": "breaker#api", "context": "prod", "outcome": "ok"}
	}
	with := func(kv ...any) store.Item { return storetest.With(good(), kv...) }
	cases := []struct {
		name string
		it   store.Item
	}{
		{"well formed", good()},
		{"only a pk", store.Item{store.PK: "audit#1#x"}},
		{"pk without id", with(store.PK, "audit#1764000000000")},
		{"pk with empty id", with(store.PK, "audit#1764000000000#")},
		{"data plane pk", with(store.PK, "audit#dp#1764000000000#z")},
		{"request pk", with(store.PK, "audit#rq#1764000000000#z")},
		{"time absent", with(attrTime, nil)},
		{"time S", with(attrTime, "t")},
		{"time fraction", with(attrTime, 1.5)},
		{"time negative", with(attrTime, int64(-1))},
		{"time past 9999", with(attrTime, int64(253402300800000))},
		{"actor absent", with("actor", nil)},
		{"action N", with("action", int64(1))},
		{"subject BOOL", with("subject", store.Bool(true))},
		{"context absent", with("context", nil)},
		{"outcome NULL", with("outcome", store.Null{})},
		{"reason absent", with("reason", nil)},
		{"reason N", with("reason", int64(2))},
		{"actor_source N", with("actor_source", int64(2))},
		{"run_id N", with(attrRunID, int64(2))},
		{"source L", with(attrSource, store.List{})},
		{"rollback_of N", with(attrRollbackOf, int64(2))},
		{"write_id N", with(store.WriteIDAttr, int64(2))},
		{"before not JSON", with("before", "{")},
		{"after N", with("after", int64(1))},
		{"approval not an approval", with(attrApproval, `{"x":1}`)},
		{"approval not JSON", with(attrApproval, `nope`)},
		{"impact not an impact", with(attrImpact, `[]`)},
		{"impact good", with(attrImpact, `{"dependency":"api"}`)},
		{"everything wrong", store.Item{store.PK: "audit#x", attrTime: store.Number("1"), "actor": int64(1), "action": store.Null{},
			"reason": int64(3), "before": "{", "after": "[", attrApproval: "{}", attrImpact: "{}", attrRunID: store.Bool(false)}},
	}
	var b strings.Builder
	for _, c := range cases {
		r, listed, problems := fromItem(c.it)
		fmt.Fprintf(&b, "== %s\nlisted=%t id=%q time=%s actor=%q dp=%t asked=%t before=%s approval=%v impact=%v\n", c.name, listed, r.ID,
			r.Time.Format("2006-01-02T15:04:05.000Z07:00"), r.Actor, r.DataPlane, r.Asked, r.Before, r.Approval != nil, r.Impact != nil)
		storetest.WriteProblems(&b, problems)
	}
	golden.Check(t, "record_problems.golden", b.String())
}
