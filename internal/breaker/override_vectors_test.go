package breaker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	v "github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// overrideVectorFile is docs/contracts/vectors/breaker-override.json.
type overrideVectorFile struct {
	Description  string           `json:"description"`
	Contract     string           `json:"contract"`
	CacheTTLMs   int64            `json:"cache_ttl_ms"`
	MinEpochMs   int64            `json:"min_epoch_ms"`
	MaxEpochMs   int64            `json:"max_epoch_ms"`
	MaxReasonLen int              `json:"max_reason_chars"`
	Cases        []overrideVector `json:"cases"`
}

type overrideVector struct {
	Name string `json:"name"`
	// Item is the item as read (nil: no item under the key).
	Item  v.Item `json:"item"`
	NowMs int64  `json:"now_ms"`
	Want  struct {
		// Treatment: active, inactive, active_malformed or inactive_malformed.
		Treatment string `json:"treatment"`
		Active    bool   `json:"active"`
		// MalformedAttributes lists the attributes that do not follow the
		// contract, in the order the contract's table names them.
		MalformedAttributes []string `json:"malformed_attributes"`
		// ExpiresAtMs is the expiry the reader applies (nil: none, which
		// includes a malformed expires_at).
		ExpiresAtMs *int64 `json:"expires_at_ms"`
		Dependency  string `json:"dependency"`
	} `json:"want"`
	Why string `json:"why"`
}

// Times of the contract's worked example: 2026-11-29T19:00:00Z, +30 min.
const (
	vecCreated int64 = 1795978800000
	vecExpires int64 = 1795980600000
)

// wellFormed is the worked example's item; each case edits a copy.
func vecWellFormed() v.Item {
	return v.Item{
		"pk":          v.S("breaker#openai"),
		"state":       v.S("forced_open"),
		"reason":      v.S("provider incident"),
		"actor":       v.S("alice@laptop"),
		"created_at":  v.N("1795978800000"),
		"expires_at":  v.N("1795980600000"),
		"ttl":         v.N("1795980600"),
		"version":     v.N("1"),
		"ix_override": v.S("breaker"),
	}
}

func vecEdit(f func(it v.Item)) v.Item {
	it := vecWellFormed()
	f(it)
	return it
}

func vecSet(name string, val v.Value) v.Item { return vecEdit(func(it v.Item) { it[name] = val }) }
func vecWithout(names ...string) v.Item {
	return vecEdit(func(it v.Item) {
		for _, n := range names {
			delete(it, n)
		}
	})
}

// oddTypes are DynamoDB JSON values of every type the item model does not hold.
var oddTypes = []v.Value{
	v.Of("BOOL", true),
	v.Of("NULL", true),
	v.Of("B", "AAEC"),
	v.Of("L", []any{map[string]any{"S": "x"}}),
	v.Of("M", map[string]any{"a": map[string]any{"N": "1"}}),
	v.Of("SS", []any{"a", "b"}),
	v.Of("NS", []any{"1", "2"}),
	v.Of("BS", []any{"AAEC"}),
}

func typeOf(val v.Value) string {
	for k := range val {
		return k
	}
	return ""
}

func overrideCases() []overrideVector {
	before := vecExpires - 1
	type c struct {
		name string
		item v.Item
		now  int64
		why  string
	}
	cases := []c{
		{"no item", nil, vecCreated, "no item under breaker#<dependency>: nothing forces the breaker"},
		{"worked example, active", vecWellFormed(), vecCreated + 10*60*1000, "state forced_open and expires_at after now"},
		{"last millisecond before expires_at", vecWellFormed(), before, "expires_at is greater than now by 1 ms"},
		{"now equals expires_at", vecWellFormed(), vecExpires, "active needs expires_at greater than now; equal is expired"},
		{"expired item still in the table", vecWellFormed(), vecExpires + 3600*1000, "expiry is checked on read; ttl is garbage collection only"},
		{"never expires (no expires_at, no ttl)", vecWithout("expires_at", "ttl"), vecCreated + 365*24*3600*1000, "expires_at absent means never"},
		{"ttl passed but expires_at not yet", vecSet("ttl", v.N("1")), vecCreated, "ttl is garbage collection only; the reader applies expires_at"},
		{"no ix_override attribute", vecWithout("ix_override"), vecCreated, "the data plane ignores ix_override"},
		{"expires_at at epoch 0", vecSet("expires_at", v.N("0")), vecCreated, "0 is a valid epoch millisecond, long past"},
		{"expires_at at the end of year 9999", vecSet("expires_at", v.N("253402300799999")), vecCreated, "the largest valid expiry"},
		{"write_id attribute (an operator write's token)", vecSet("write_id", v.S("5f0c1e2d3c4b5a69788796a5b4c3d2e1")), vecCreated, "the data plane ignores write_id"},
		{"unknown string attribute", vecSet("note", v.S("ticket INC-42")), vecCreated, "attributes the contract does not name are ignored"},
		{"unknown number attribute", vecSet("priority", v.N("2.5")), vecCreated, "attributes the contract does not name are ignored"},
		// state
		{"state missing", vecWithout("state"), vecCreated, "a missing state is inactive: nothing says the breaker should be forced"},
		{"state another word", vecSet("state", v.S("open")), vecCreated, "only forced_open forces the breaker"},
		{"state in capitals", vecSet("state", v.S("FORCED_OPEN")), vecCreated, "the state is compared exactly"},
		{"state with a trailing space", vecSet("state", v.S("forced_open ")), vecCreated, "the state is compared exactly"},
		{"state as a number", vecSet("state", v.N("3")), vecCreated, "a state that is not a string is inactive"},
		{"state missing and expires_at malformed", vecEdit(func(it v.Item) { delete(it, "state"); it["expires_at"] = v.S("tomorrow") }), vecCreated, "without forced_open the item is inactive whatever its expiry"},
		// expires_at
		{"expires_at a string", vecSet("expires_at", v.S("tomorrow")), vecCreated + 100*365*24*3600*1000, "a malformed expires_at counts as absent: forced until cleared"},
		{"expires_at digits in a string", vecSet("expires_at", v.S("1795980600000")), vecExpires + 1000, "type S is malformed even when it holds digits; it counts as absent"},
		{"expires_at fractional", vecSet("expires_at", v.N("1795980600000.5")), vecExpires + 1000, "not a whole number: malformed, counts as absent"},
		{"expires_at negative", vecSet("expires_at", v.N("-1")), vecCreated, "before 1970: malformed, counts as absent"},
		{"expires_at after year 9999", vecSet("expires_at", v.N("253402300800000")), vecCreated, "after the end of 9999: malformed, counts as absent"},
		{"expires_at huge", vecSet("expires_at", v.N("1e20")), vecCreated, "out of range: malformed, counts as absent"},
		{"expires_at in seconds (a plausible mistake) is valid and long past", vecSet("expires_at", v.N("1795980600")), vecCreated, "a whole number in range is read as milliseconds: January 1970, so expired"},
		// the other attributes
		{"version fractional", vecSet("version", v.N("1.5")), vecCreated, "a malformed version does not change the answer"},
		{"version zero", vecSet("version", v.N("0")), vecCreated, "a malformed version does not change the answer"},
		{"version a string", vecSet("version", v.S("1")), vecCreated, "a malformed version does not change the answer"},
		{"version missing", vecWithout("version"), vecCreated, "a malformed version does not change the answer"},
		{"version 9e125", vecSet("version", v.N("9e125")), vecCreated, "a malformed version does not change the answer"},
		{"created_at out of range", vecSet("created_at", v.N("1e20")), vecCreated, "a malformed created_at does not change the answer"},
		{"created_at missing", vecWithout("created_at"), vecCreated, "a malformed created_at does not change the answer"},
		{"reason missing", vecWithout("reason"), vecCreated, "a malformed reason does not change the answer"},
		{"reason of 501 characters", vecSet("reason", v.S(strings.Repeat("é", 501))), vecCreated, "reason is at most 500 characters (not bytes); longer does not change the answer"},
		{"reason of 500 characters", vecSet("reason", v.S(strings.Repeat("é", 500))), vecCreated, "500 characters is within the limit"},
		{"actor a number", vecSet("actor", v.N("7")), vecCreated, "a malformed actor does not change the answer"},
		{"ttl a string", vecSet("ttl", v.S("soon")), vecCreated, "a malformed ttl does not change the answer"},
		{"pk with an invalid dependency", vecSet("pk", v.S("breaker#Open_AI")), vecCreated, "the key names no valid dependency; the rule still applies to the item read"},
		{"expired and malformed version", vecSet("version", v.N("1.5")), vecExpires, "a valid expiry still applies when another attribute is malformed"},
		{"everything malformed but state", vecEdit(func(it v.Item) {
			it["expires_at"] = v.S("x")
			it["version"] = v.S("x")
			it["created_at"] = v.S("x")
			it["reason"] = v.N("1")
			it["actor"] = v.N("1")
			it["ttl"] = v.S("x")
		}), vecCreated, "state forced_open with an unreadable expiry holds until cleared"},
	}
	for _, odd := range oddTypes {
		t := typeOf(odd)
		cases = append(cases,
			c{"unknown attribute of type " + t, vecSet("extra_"+strings.ToLower(t), odd), vecCreated,
				"attributes the contract does not name are ignored, whatever their type"},
			c{"expires_at of type " + t, vecSet("expires_at", odd), vecCreated,
				"a wrong-typed expires_at is malformed and counts as absent: forced until cleared"},
			c{"state of type " + t, vecSet("state", odd), vecCreated,
				"a state that is not a string is inactive"},
			c{"version of type " + t, vecSet("version", odd), vecCreated,
				"a wrong-typed version is malformed and does not change the answer"},
		)
	}
	out := make([]overrideVector, 0, len(cases))
	for _, c := range cases {
		out = append(out, overrideVector{Name: c.name, Item: c.item, NowMs: c.now, Why: c.why})
	}
	return out
}

// contractOrder is the order of the contract's attribute table.
var contractOrder = []string{"pk", "state", "reason", "actor", "created_at", "expires_at", "ttl", "version"}

func solveOverride(t *testing.T, vec *overrideVector) {
	vec.Want.MalformedAttributes = []string{}
	if vec.Item == nil {
		vec.Want.Treatment = "inactive"
		return
	}
	it, err := v.StoreItem(vec.Item)
	if err != nil {
		t.Fatalf("%s: %v", vec.Name, err)
	}
	o, err := breaker.OverrideFromItem(it)
	if err != nil {
		t.Fatalf("%s: %v", vec.Name, err)
	}
	now := time.UnixMilli(vec.NowMs)
	f := o.ForceAt(now)
	vec.Want.Active = f.ActiveAt(now)
	if vec.Want.Active != o.ActiveAt(now) {
		t.Fatalf("%s: Force and Override disagree", vec.Name)
	}
	vec.Want.Dependency = o.Dependency
	if o.Expires() {
		ms := o.ExpiresAt.UnixMilli()
		vec.Want.ExpiresAtMs = &ms
	}
	for _, a := range contractOrder {
		if o.HasProblem(a) {
			vec.Want.MalformedAttributes = append(vec.Want.MalformedAttributes, a)
		}
	}
	if len(vec.Want.MalformedAttributes) != len(o.Problems) {
		t.Fatalf("%s: problems %v outside the contract's attributes", vec.Name, o.Problems)
	}
	vec.Want.Treatment = map[bool]string{true: "active", false: "inactive"}[vec.Want.Active]
	if o.Malformed() {
		vec.Want.Treatment += "_malformed"
	}
}

// TestContractVectors generates docs/contracts/vectors/breaker-override.json
// from the override rule ([breaker.OverrideFromItem], [breaker.Override.ForceAt])
// and fails when the checked-in file differs (make vectors rewrites it).
func TestContractVectors(t *testing.T) {
	t.Parallel()
	doc := overrideVectorFile{
		Description: "Override items (docs/contracts/breaker-override.md) as DynamoDB JSON, as GetItem returns them " +
			"(item null: no item), read at now_ms (epoch ms). want.active is the one right answer of the data plane's rule; " +
			"treatment adds whether the item is malformed (a reader logs breaker_override_malformed then); " +
			"malformed_attributes lists the contract's attributes that do not follow it, in the contract's order; " +
			"expires_at_ms is the expiry the reader applies (null: none, which includes an unreadable one); " +
			"dependency is the pk without breaker#. why says which rule decides. Generated from the Go code by make vectors.",
		Contract:     "docs/contracts/breaker-override.md",
		CacheTTLMs:   breaker.CacheTTL.Milliseconds(),
		MinEpochMs:   0,
		MaxEpochMs:   253402300799999,
		MaxReasonLen: 500,
		Cases:        overrideCases(),
	}
	for i := range doc.Cases {
		solveOverride(t, &doc.Cases[i])
	}
	v.Check(t, "breaker-override.json", doc)
}
