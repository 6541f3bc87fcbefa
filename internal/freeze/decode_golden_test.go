package freeze_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/storetest"
	"github.com/kosha-platform/koshactl/internal/testutil/golden"
)

// TestMalformedFreezesReportTheirProblemsAsBefore decodes freeze items
// malformed every way the contract names (absent, wrong type, out of
// range; required, optional, and lifted_by required only once lifted) and
// compares every problem, in order and word for word, what was decoded,
// and the condition and version of the next write, with
// testdata/freeze_problems.golden, written by the decoder before it moved
// to store.Decoder (7846ade). go test -update rewrites it.
func TestMalformedFreezesReportTheirProblemsAsBefore(t *testing.T) {
	const ok = int64(1764000000000)
	good := func() store.Item {
		return store.Item{store.PK: freeze.Key, "actor": "a", "reason": "r", "set_at": ok, "expires_at": ok + 1000, "version": int64(2)}
	}
	with := func(kv ...any) store.Item { return storetest.With(good(), kv...) }
	cases := []struct {
		name string
		it   store.Item
	}{
		{"well formed", good()},
		{"only a pk", store.Item{store.PK: freeze.Key}},
		{"other pk", with(store.PK, "freeze#other")},
		{"actor N", with("actor", int64(1))},
		{"reason absent", with("reason", nil)},
		{"reason too long", with("reason", strings.Repeat("y", 700))},
		{"ref N", with("ref", int64(7))},
		{"ref too long", with("ref", strings.Repeat("z", 400))},
		{"ref S", with("ref", "CHG-1")},
		{"set_at absent", with("set_at", nil)},
		{"set_at S", with("set_at", "now")},
		{"set_at negative", with("set_at", int64(-1))},
		{"expires_at absent", with("expires_at", nil)},
		{"expires_at fraction", with("expires_at", 2.5)},
		{"expires_at past 9999", with("expires_at", int64(253402300800000))},
		{"lifted_at without lifted_by", with("lifted_at", ok+10)},
		{"lifted_at S without lifted_by", with("lifted_at", "x")},
		{"lifted_by without lifted_at", with("lifted_by", "b")},
		{"lifted_by N without lifted_at", with("lifted_by", int64(3))},
		{"lifted", with("lifted_at", ok+10, "lifted_by", "b", "lift_reason", "done")},
		{"lift_reason N", with("lift_reason", store.Bool(true))},
		{"version absent", with("version", nil)},
		{"version 0", with("version", int64(0))},
		{"version 4.7", with("version", 4.7)},
		{"version S", with("version", "2")},
		{"version huge", with("version", 9e125)},
		{"ttl S", with("ttl", "x")},
		{"ttl whole", with("ttl", int64(1))},
		{"write_id", with("write_id", "tok-1")},
		{"approval", with("approval", `{"decision":"allow"}`)},
		{"approval no decision", with("approval", `{}`)},
		{"everything wrong", store.Item{store.PK: "freeze#x", "actor": store.Null{}, "reason": int64(1), "ref": store.Bool(true), "set_at": 1.5,
			"expires_at": "e", "lifted_at": int64(-3), "lifted_by": store.List{}, "lift_reason": int64(2), "version": int64(-1), "ttl": 3.5}},
	}
	var b strings.Builder
	for _, c := range cases {
		f, err := freeze.FromItem(c.it)
		fmt.Fprintf(&b, "== %s\nerr=%v malformed=%t version=%d next=%d cond=%#v set=%s expires=%s lifted=%s by=%q ref=%q approval=%v\n", c.name, err,
			f.Malformed(), f.Version, f.NextVersion(), f.Condition(), f.SetAt.Format("2006-01-02T15:04:05.000Z07:00"),
			f.ExpiresAt.Format("2006-01-02T15:04:05.000Z07:00"), f.LiftedAt.Format("2006-01-02T15:04:05.000Z07:00"), f.LiftedBy, f.Ref, f.Approval != nil)
		storetest.WriteProblems(&b, f.Problems)
	}
	in, err := freeze.In(map[string]store.Item{})
	fmt.Fprintf(&b, "== In of none\n%v %v\n", in, err)
	golden.Check(t, "freeze_problems.golden", b.String())
}
