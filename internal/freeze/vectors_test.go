package freeze_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/freeze"
	v "github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// vectorFile is docs/contracts/vectors/freeze.json.
type vectorFile struct {
	Description       string `json:"description"`
	Contract          string `json:"contract"`
	Key               string `json:"key"`
	CacheTTLMs        int64  `json:"cache_ttl_ms"`
	MaxReadAgeMs      int64  `json:"max_read_age_ms"`
	RecordRetentionMs int64  `json:"record_retention_ms"`
	// HeaderMaxTTLSeconds is what a v=1 header's issue time is taken as
	// before its exp.
	HeaderMaxTTLSeconds int64          `json:"header_max_ttl_seconds"`
	MaxReasonChars      int            `json:"max_reason_chars"`
	MaxRefChars         int            `json:"max_ref_chars"`
	Items               []itemVector   `json:"items"`
	Headers             []headerVector `json:"headers"`
	Readings            []readVector   `json:"readings"`
	Mints               []mintVector   `json:"mints"`
	Refs                []refVector    `json:"refs"`
}

type itemVector struct {
	Name string `json:"name"`
	// Item is the item as read (nil: no item under freeze#fleet).
	Item  v.Item `json:"item"`
	NowMs int64  `json:"now_ms"`
	Want  struct {
		Frozen bool `json:"frozen"`
		// State is frozen, lifted or expired; "" without an item.
		State string `json:"state"`
		// EndMs is when the freeze ends (null: it has no readable end).
		EndMs *int64 `json:"end_ms"`
		// ChaosNotBefore is the earliest iat (unix seconds) of a header
		// it lets through once ended (null while it has no end).
		ChaosNotBefore      *int64   `json:"chaos_not_before"`
		MalformedAttributes []string `json:"malformed_attributes"`
	} `json:"want"`
	Why string `json:"why"`
}

// vecHeader is the part of a chaos header the rule reads: iat (0: a v=1
// header) and exp.
type vecHeader struct {
	IAT int64 `json:"iat,omitempty"`
	Exp int64 `json:"exp"`
}

type headerVector struct {
	Name   string    `json:"name"`
	Item   v.Item    `json:"item"`
	NowMs  int64     `json:"now_ms"`
	Header vecHeader `json:"header"`
	Want   struct {
		Honoured bool `json:"honoured"`
		// Field is what the freeze check names when it refuses: "" (the
		// fleet is frozen), iat, or exp for a v=1 header.
		Field string `json:"field"`
	} `json:"want"`
	Why string `json:"why"`
}

type readVector struct {
	Name string `json:"name"`
	Item v.Item `json:"item"`
	// ReadAtMs is when the instance last read the item (null: never).
	ReadAtMs *int64    `json:"read_at_ms"`
	NowMs    int64     `json:"now_ms"`
	Header   vecHeader `json:"header"`
	Want     struct {
		// RefusesAll is the chaos_frozen gauge: 1 when true.
		RefusesAll bool   `json:"refuses_all"`
		Honoured   bool   `json:"honoured"`
		Field      string `json:"field"`
	} `json:"want"`
	Why string `json:"why"`
}

type mintVector struct {
	Name  string `json:"name"`
	Item  v.Item `json:"item"`
	NowMs int64  `json:"now_ms"`
	Want  struct {
		// Refused: no header is minted (exit 7 naming the freeze).
		Refused bool `json:"refused"`
		// WaitMs is how long a minter waits before minting, so the iat
		// it writes is not before the freeze's end.
		WaitMs int64 `json:"wait_ms"`
	} `json:"want"`
}

type refVector struct {
	Ref   string `json:"ref"`
	Valid bool   `json:"valid"`
}

// The worked example: set 2026-11-29T19:00:00Z by alice@laptop for 30
// minutes (INC-123).
const (
	tSet     int64 = 1795978800000
	tExpires int64 = tSet + 30*60*1000
	minute   int64 = 60 * 1000
)

func wellFormed() v.Item {
	return v.Item{
		"pk":         v.S("freeze#fleet"),
		"actor":      v.S("alice@laptop"),
		"reason":     v.S("real incident: payments failing"),
		"ref":        v.S("INC-123"),
		"set_at":     v.N("1795978800000"),
		"expires_at": v.N("1795980600000"),
		"ttl":        v.N("1796067000"),
		"version":    v.N("1"),
		"write_id":   v.S("5f0c3a9e2b7d41c8a6e0f1d2c3b4a596"),
	}
}

func edit(f func(it v.Item)) v.Item {
	it := wellFormed()
	f(it)
	return it
}

func set(name string, val v.Value) v.Item { return edit(func(it v.Item) { it[name] = val }) }

func without(names ...string) v.Item {
	return edit(func(it v.Item) {
		for _, n := range names {
			delete(it, n)
		}
	})
}

// lifted is the worked example lifted at ms by bob@laptop.
func lifted(ms int64) v.Item {
	return edit(func(it v.Item) {
		it["lifted_at"] = v.N(itoa(ms))
		it["lifted_by"] = v.S("bob@laptop")
		it["lift_reason"] = v.S("not us: the provider's outage")
		it["version"] = v.N("2")
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

var oddTypes = []v.Value{
	v.Of("BOOL", true), v.Of("NULL", true), v.Of("B", "AAEC"), v.Of("L", []any{map[string]any{"S": "x"}}),
	v.Of("M", map[string]any{"a": map[string]any{"N": "1"}}), v.Of("SS", []any{"a", "b"}), v.Of("NS", []any{"1", "2"}), v.Of("BS", []any{"AAEC"}),
}

func typeOf(val v.Value) string {
	for k := range val {
		return k
	}
	return ""
}

func itemCases() []itemVector {
	type c struct {
		name string
		item v.Item
		now  int64
		why  string
	}
	lift := tSet + 5*minute
	cases := []c{
		{"no item", nil, tSet, "no freeze was ever set (or its record was collected): nothing is frozen"},
		{"worked example, frozen", wellFormed(), tSet + 10*minute, "set_at passed, expires_at after now, not lifted"},
		{"last millisecond before expires_at", wellFormed(), tExpires - 1, "the freeze holds while now is before its end"},
		{"now equals expires_at", wellFormed(), tExpires, "the freeze ends at expires_at"},
		{"expired record still in the table", wellFormed(), tExpires + 60*minute, "expiry is checked on read; ttl is garbage collection only"},
		{"until lifted (no expires_at)", without("expires_at", "ttl"), tSet + 365*24*60*minute, "without expires_at a freeze holds until lifted"},
		{"lifted", lifted(lift), lift + 1, "lifted_at before expires_at ends the freeze at the lift"},
		{"lifted, read at the instant of the lift", lifted(lift), lift, "the freeze ends at lifted_at"},
		{"lifted at a fraction of a second", lifted(lift + 400), lift + 401, "chaos_not_before is the end rounded up to the second"},
		{"lifted after it had expired", lifted(tExpires + 5*minute), tExpires + 10*minute, "the end is the first of expires_at and lifted_at: it expired"},
		{"lifted at an instant the reader's clock has not reached", lifted(lift), lift - 1, "a freeze holds until its end by the reader's clock, lifted or not"},
		{"lifted, no expires_at", edit(func(it v.Item) {
			delete(it, "expires_at")
			it["lifted_at"] = v.N(itoa(lift))
			it["lifted_by"] = v.S("bob@laptop")
		}), lift + 1, "a freeze without expiry ends when lifted"},
		{"set_at in the future", set("set_at", v.N(itoa(tSet+60*minute))), tSet, "set_at does not delay a freeze: the item holds from the moment it is read"},
		{"ref absent", without("ref"), tSet, "ref is optional"},
		{"write_id and approval", set("approval", v.S(`{"decision":"allow"}`)), tSet, "the data plane ignores write_id and approval"},
		{"unknown string attribute", set("note", v.S("war room: #inc-123")), tSet, "attributes the contract does not name are ignored"},
		// expires_at and lifted_at
		{"expires_at a string", set("expires_at", v.S("tomorrow")), tSet + 365*24*60*minute, "a malformed expires_at counts as absent: frozen until lifted"},
		{"expires_at fractional", set("expires_at", v.N("1795980600000.5")), tExpires + 1000, "not a whole number: malformed, counts as absent"},
		{"expires_at after year 9999", set("expires_at", v.N("253402300800000")), tSet, "out of range: malformed, counts as absent"},
		{"expires_at at epoch 0", set("expires_at", v.N("0")), tSet, "0 is a valid epoch millisecond, long past: expired"},
		{"lifted_at a string", edit(func(it v.Item) {
			it["lifted_at"] = v.S("now")
			it["lifted_by"] = v.S("bob@laptop")
		}), tSet + 10*minute, "a malformed lifted_at counts as absent: the freeze holds until expires_at"},
		{"lifted_at malformed, no expires_at", edit(func(it v.Item) {
			delete(it, "expires_at")
			it["lifted_at"] = v.N("-5")
			it["lifted_by"] = v.S("bob@laptop")
		}), tSet + 365*24*60*minute, "no readable end: frozen until a readable lift"},
		{"lifted_at without lifted_by", edit(func(it v.Item) { it["lifted_at"] = v.N(itoa(lift)) }), lift + 1, "lifted_by missing is malformed and does not change the answer"},
		// the others
		{"set_at missing", without("set_at"), tSet, "a malformed set_at does not change the answer"},
		{"set_at a string", set("set_at", v.S("19:00")), tSet, "a malformed set_at does not change the answer"},
		{"actor missing", without("actor"), tSet, "a malformed actor does not change the answer"},
		{"reason a number", set("reason", v.N("7")), tSet, "a malformed reason does not change the answer"},
		{"reason of 501 characters", set("reason", v.S(strings.Repeat("é", 501))), tSet, "reason is at most 500 characters (not bytes)"},
		{"ref of 65 characters", set("ref", v.S(strings.Repeat("A", 65))), tSet, "ref is at most 64 characters"},
		{"ref a number", set("ref", v.N("123")), tSet, "a malformed ref does not change the answer"},
		{"version zero", set("version", v.N("0")), tSet, "a malformed version does not change the answer"},
		{"version missing", without("version"), tSet, "a malformed version does not change the answer"},
		{"version 1.5", set("version", v.N("1.5")), tSet, "a malformed version does not change the answer"},
		{"ttl a string", set("ttl", v.S("soon")), tSet, "a malformed ttl does not change the answer"},
		{"pk of another freeze", set("pk", v.S("freeze#eu-west-1")), tSet, "only freeze#fleet is the fleet's freeze; the rule still applies to the item read"},
		{"everything malformed", edit(func(it v.Item) {
			for _, a := range []string{"actor", "reason", "ref", "set_at", "expires_at", "version", "ttl"} {
				it[a] = v.Of("BOOL", true)
			}
		}), tSet + 365*24*60*minute, "an item with no readable end holds, whatever else is wrong"},
	}
	for _, odd := range oddTypes {
		t := typeOf(odd)
		cases = append(cases,
			c{"unknown attribute of type " + t, set("extra_"+strings.ToLower(t), odd), tSet, "attributes the contract does not name are ignored, whatever their type"},
			c{"expires_at of type " + t, set("expires_at", odd), tExpires + 1, "a wrong-typed expires_at counts as absent: frozen until lifted"},
			c{"lifted_at of type " + t, edit(func(it v.Item) {
				it["lifted_at"] = odd
				it["lifted_by"] = v.S("bob@laptop")
			}), tSet + 10*minute, "a wrong-typed lifted_at counts as absent"},
		)
	}
	out := make([]itemVector, 0, len(cases))
	for _, c := range cases {
		out = append(out, itemVector{Name: c.name, Item: c.item, NowMs: c.now, Why: c.why})
	}
	return out
}

// contractOrder is the order of the contract's attribute table.
var contractOrder = []string{"pk", "actor", "reason", "ref", "set_at", "expires_at", "lifted_at", "lifted_by", "lift_reason", "ttl", "version"}

func readItem(t *testing.T, item v.Item) *freeze.Freeze {
	t.Helper()
	if item == nil {
		return nil
	}
	it, err := v.StoreItem(item)
	if err != nil {
		t.Fatal(err)
	}
	f, err := freeze.FromItem(it)
	if err != nil {
		t.Fatal(err)
	}
	return &f
}

func solveItem(t *testing.T, vec *itemVector) {
	vec.Want.MalformedAttributes = []string{}
	f := readItem(t, vec.Item)
	if f == nil {
		return
	}
	now := time.UnixMilli(vec.NowMs)
	vec.Want.Frozen = f.FrozenAt(now)
	vec.Want.State = f.State(now)
	if end, ok := f.End(); ok {
		ms := end.UnixMilli()
		vec.Want.EndMs = &ms
	}
	if nb, ok := f.ChaosNotBefore(); ok {
		vec.Want.ChaosNotBefore = &nb
	}
	for _, a := range contractOrder {
		if f.HasProblem(a) {
			vec.Want.MalformedAttributes = append(vec.Want.MalformedAttributes, a)
		}
	}
	if len(vec.Want.MalformedAttributes) != len(f.Problems) {
		t.Fatalf("%s: problems %v outside the contract's attributes", vec.Name, f.Problems)
	}
}

// admit runs the freeze check as a data plane does on a header that passed
// every other check.
func admit(rule chaos.FreezeRule, h vecHeader, now time.Time) (bool, string) {
	hdr := chaos.Header{Fields: chaos.Fields{IAT: h.IAT, Exp: h.Exp}}
	err := chaos.CheckFreezeRule(&hdr, rule, now)
	if err == nil {
		return true, ""
	}
	var ce *chaos.CheckError
	if !asCheck(err, &ce) {
		panic(err)
	}
	return false, ce.Field
}

func headerCases() []headerVector {
	lift := tSet + 5*minute
	liftS := lift / 1000
	before := tSet/1000 - 60 // minted a minute before the freeze
	type c struct {
		name string
		item v.Item
		now  int64
		h    vecHeader
		why  string
	}
	cases := []c{
		{"no freeze: v=2", nil, tSet, vecHeader{IAT: tSet / 1000, Exp: tSet/1000 + 300}, "no item: the freeze check passes"},
		{"no freeze: v=1", nil, tSet, vecHeader{Exp: tSet/1000 + 300}, "no item: v=1 headers pass too"},
		{"frozen: a header minted before it", wellFormed(), tSet + minute, vecHeader{IAT: before, Exp: before + 900}, "every header is refused while frozen; the field is the whole header"},
		{"frozen: a header minted during it", wellFormed(), tSet + 2*minute, vecHeader{IAT: tSet/1000 + 60, Exp: tSet/1000 + 360}, "minted during the freeze: refused"},
		{"lifted: minted before the freeze, still unexpired", lifted(lift), lift + 1000, vecHeader{IAT: before, Exp: before + 900}, "a header minted before a freeze is never honoured again"},
		{"lifted: minted during the freeze", lifted(lift), lift + 1000, vecHeader{IAT: tSet/1000 + 60, Exp: tSet/1000 + 660}, "minted before the end: void"},
		{"lifted: minted in the second of the lift", lifted(lift), lift + 1000, vecHeader{IAT: liftS, Exp: liftS + 300}, "issued at the end (whole second): honoured"},
		{"lifted: minted a second before the lift", lifted(lift), lift + 1000, vecHeader{IAT: liftS - 1, Exp: liftS + 299}, "issued before the end: void, naming iat"},
		{"lifted at .400: iat of that second is void", lifted(lift + 400), lift + 1000, vecHeader{IAT: liftS, Exp: liftS + 300}, "the end rounded up to the second is the earliest iat"},
		{"lifted at .400: iat of the next second", lifted(lift + 400), lift + 1000, vecHeader{IAT: liftS + 1, Exp: liftS + 301}, "issued at the end rounded up: honoured"},
		{"lifted: v=1 with exp 15 minutes after the lift", lifted(lift), lift + 1000, vecHeader{Exp: liftS + 900}, "a v=1 header counts as issued at exp - 900: at the end, honoured"},
		{"lifted: v=1 a second short", lifted(lift), lift + 1000, vecHeader{Exp: liftS + 899}, "counted as issued a second before the end: void, naming exp"},
		{"lifted: v=1 minted after the lift with a 5-minute ttl", lifted(lift), lift + 2000, vecHeader{Exp: liftS + 1 + 300}, "without iat a header counts as issued 15 minutes before its exp: void until exp - 900 passes the end"},
		{"expired: minted before the freeze", wellFormed(), tExpires + 1000, vecHeader{IAT: tExpires/1000 - 31*60, Exp: tExpires/1000 + 10}, "an expired freeze voids what was minted before its end, as a lift does"},
		{"expired: minted after it", wellFormed(), tExpires + 2000, vecHeader{IAT: tExpires/1000 + 1, Exp: tExpires/1000 + 301}, "minted after the end: honoured"},
		{"lifted at a future instant: refused", lifted(lift), lift - 1000, vecHeader{IAT: liftS + 10, Exp: liftS + 310}, "the freeze holds until the reader's clock reaches the lift"},
		{"no readable end: frozen", set("expires_at", v.S("tomorrow")), tExpires + 60*minute, vecHeader{IAT: tExpires/1000 + 3600, Exp: tExpires/1000 + 3900}, "a malformed expires_at counts as absent: frozen until lifted"},
	}
	out := make([]headerVector, 0, len(cases))
	for _, c := range cases {
		out = append(out, headerVector{Name: c.name, Item: c.item, NowMs: c.now, Header: c.h, Why: c.why})
	}
	return out
}

func readCases() []readVector {
	ms := func(x int64) *int64 { return &x }
	lift := tSet + 5*minute
	h := vecHeader{IAT: tSet/1000 + 3600, Exp: tSet/1000 + 3900}
	now := tSet + 61*minute
	maxAge := freeze.MaxReadAge.Milliseconds()
	type c struct {
		name   string
		item   v.Item
		readAt *int64
		why    string
	}
	cases := []c{
		{"never read", nil, nil, "before its first read an instance cannot know whether a freeze holds: every header is refused"},
		{"no item, read a second ago", nil, ms(now - 1000), "nothing frozen"},
		{"no item, read exactly max_read_age ago", nil, ms(now - maxAge), "a reading is usable for max_read_age"},
		{"no item, read a millisecond past max_read_age", nil, ms(now - maxAge - 1), "too old: a freeze may hold unseen; every header is refused"},
		{"frozen item, read a second ago", edit(func(it v.Item) { delete(it, "expires_at") }), ms(now - 1000), "frozen: every header refused, the gauge reads 1"},
		{"lifted item, read a second ago", lifted(lift), ms(now - 1000), "lifted: a header minted after the lift is honoured"},
	}
	out := make([]readVector, 0, len(cases))
	for _, c := range cases {
		out = append(out, readVector{Name: c.name, Item: c.item, ReadAtMs: c.readAt, NowMs: now, Header: h, Why: c.why})
	}
	return out
}

func mintCases() []mintVector {
	lift := tSet + 5*minute
	type c struct {
		name string
		item v.Item
		now  int64
	}
	cases := []c{
		{"no freeze", nil, tSet},
		{"frozen", wellFormed(), tSet + minute},
		{"lifted a while ago", lifted(lift), lift + minute},
		{"lifted at a whole second, minting at it", lifted(lift), lift},
		{"lifted at .400, minting at .600 of that second", lifted(lift + 400), lift + 600},
		{"lifted at .400, minting at .400", lifted(lift + 400), lift + 400},
		{"expired", wellFormed(), tExpires},
		{"lifted at an instant this clock has not reached", lifted(lift), lift - 1},
	}
	out := make([]mintVector, 0, len(cases))
	for _, c := range cases {
		out = append(out, mintVector{Name: c.name, Item: c.item, NowMs: c.now})
	}
	return out
}

// TestContractVectors generates docs/contracts/vectors/freeze.json from
// the freeze rule (FromItem, FrozenAt, AdmitChaos, Reading, CheckMint) and
// fails when the checked-in file differs (make vectors rewrites it).
func TestContractVectors(t *testing.T) {
	t.Parallel()
	doc := vectorFile{
		Description: "The fleet's freeze item (docs/contracts/freeze.md) as DynamoDB JSON, as GetItem returns it (item null: no item). " +
			"items: read at now_ms (epoch ms): frozen is the one right answer of the rule, state frozen|lifted|expired (\"\" without an item), " +
			"end_ms the end applied (null: no readable end), chaos_not_before the earliest iat (unix s) honoured once ended, " +
			"malformed_attributes the contract's attributes that do not follow it, in the contract's order. " +
			"headers: the freeze check on a header that passed every other check (iat absent: v=1, counted as issued at exp - header_max_ttl_seconds): " +
			"honoured, or field \"\" (frozen), iat or exp (issued before the end). readings: a data-plane instance that last read the item at read_at_ms " +
			"(null: never): refuses_all is the chaos_frozen gauge (true: 1), and the header's verdict. mints: what a minter does at now_ms: refused, " +
			"or wait_ms before minting. refs: the syntax of ref. Generated from the Go code by make vectors.",
		Contract:            "docs/contracts/freeze.md",
		Key:                 freeze.Key,
		CacheTTLMs:          freeze.CacheTTL.Milliseconds(),
		MaxReadAgeMs:        freeze.MaxReadAge.Milliseconds(),
		RecordRetentionMs:   freeze.RecordRetention.Milliseconds(),
		HeaderMaxTTLSeconds: int64(chaos.MaxTTL / time.Second),
		MaxReasonChars:      500,
		MaxRefChars:         freeze.MaxRefLen,
		Items:               itemCases(),
		Headers:             headerCases(),
		Readings:            readCases(),
		Mints:               mintCases(),
	}
	for i := range doc.Items {
		solveItem(t, &doc.Items[i])
	}
	for i := range doc.Headers {
		hv := &doc.Headers[i]
		hv.Want.Honoured, hv.Want.Field = admit(freeze.Fixed{Freeze: readItem(t, hv.Item)}, hv.Header, time.UnixMilli(hv.NowMs))
	}
	for i := range doc.Readings {
		rv := &doc.Readings[i]
		r := freeze.Reading{Freeze: readItem(t, rv.Item)}
		if rv.ReadAtMs != nil {
			r.ReadAt = time.UnixMilli(*rv.ReadAtMs)
		}
		now := time.UnixMilli(rv.NowMs)
		rv.Want.RefusesAll = r.RefusesAll(now)
		rv.Want.Honoured, rv.Want.Field = admit(r, rv.Header, now)
	}
	for i := range doc.Mints {
		mv := &doc.Mints[i]
		wait, err := freeze.CheckMint(readItem(t, mv.Item), time.UnixMilli(mv.NowMs))
		mv.Want.Refused, mv.Want.WaitMs = err != nil, wait.Milliseconds()
	}
	for _, ref := range []string{"INC-123", "JIRA:OPS-9", "pagerduty/Q1ABC", "a", strings.Repeat("A", 64), strings.Repeat("A", 65), "",
		"-INC", "INC 123", "INC-123\n", "inc_7.2#b", "INC‐123", "ünc"} {
		doc.Refs = append(doc.Refs, refVector{Ref: ref, Valid: freeze.ValidateRef(ref) == nil})
	}
	v.Check(t, "freeze.json", doc)
}

func asCheck(err error, ce **chaos.CheckError) bool { return errors.As(err, ce) }
