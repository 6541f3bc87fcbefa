package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Opener returns a fresh, empty store for one subtest and arranges for it to
// be closed when the subtest ends.
type Opener func(t *testing.T) store.Store

// Run runs the conformance suite against the stores open returns. Subtests
// run in parallel, each on its own store.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"GetMissing", testGetMissing},
		{"RoundTrip", testRoundTrip},
		{"EveryAttributeType", testEveryType},
		{"PutReplacesWholeItem", testPutReplaces},
		{"ItemsAreCopies", testItemsAreCopies},
		{"InvalidItems", testInvalidItems},
		{"PutConditions", testPutConditions},
		{"DeleteConditions", testDeleteConditions},
		{"ConditionAttributeNames", testConditionAttributeNames},
		{"ScanPrefix", testScanPrefix},
		{"ScanPages", func(t *testing.T, s store.Store) { testScanMany(t, s, 1) }},
		{"ScanSegments", func(t *testing.T, s store.Store) { testScanMany(t, s, 4) }},
		{"ScanStopsEarly", testScanStopsEarly},
		{"ScanWritesInLoop", testScanWritesInLoop},
		{"CanceledContext", testCanceledContext},
		{"RaceIfAbsent", testRaceIfAbsent},
		{"RaceCompareAndSet", testRaceCompareAndSet},
		{"Describe", testDescribe},
		{"ChangeAllOrNothing", testChangeAllOrNothing},
		{"ChangeConflictNamesEveryRefusal", testChangeConflicts},
		{"ChangeChecksWithoutWriting", testChangeChecks},
		{"ChangeRetrySettledByProof", testChangeRetry},
		{"ChangeRetryAfterOverwriteSettledByRecord", testChangeRetryAfterOverwrite},
		{"ChangeRaceOneWinner", testChangeRace},
		{"ChangeLimits", testChangeLimits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// canonical is what a backend returns for it: every number as
// store.ParseNumber reads store.FormatNumber's text, so ints are int64,
// fractional floats unchanged, and whole floats that fit an int64 read back
// as int64.
func canonical(it store.Item) store.Item {
	out := store.Normalize(it)
	for k, v := range out {
		if s, ok := store.FormatNumber(v); ok {
			n, err := store.ParseNumber(s)
			if err != nil {
				panic(err)
			}
			out[k] = n
		}
	}
	return out
}

func mustPut(t *testing.T, s store.Store, it store.Item) {
	t.Helper()
	if err := s.Put(ctx(t), it, store.Always()); err != nil {
		t.Fatalf("Put(%v): %v", it, err)
	}
}

func mustGet(t *testing.T, s store.Store, pk string) store.Item {
	t.Helper()
	it, err := s.Get(ctx(t), pk)
	if err != nil {
		t.Fatalf("Get(%q): %v", pk, err)
	}
	return it
}

// state returns the item under pk, or nil when absent.
func state(t *testing.T, s store.Store, pk string) store.Item {
	t.Helper()
	it, err := s.Get(ctx(t), pk)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("Get(%q): %v", pk, err)
	}
	return it
}

func sameItem(t *testing.T, what string, got, want store.Item) {
	t.Helper()
	if want != nil {
		want = canonical(want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, show(got), show(want))
	}
}

func show(it store.Item) string {
	if it == nil {
		return "<absent>"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, k := range it.Keys() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %T(%#v)", k, it[k], it[k])
	}
	b.WriteString("}")
	return b.String()
}

func testGetMissing(t *testing.T, s store.Store) {
	_, err := s.Get(ctx(t), "breaker#nosuch")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing item: err = %v, want ErrNotFound", err)
	}
	if errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a missing item is reported as unavailable: %v", err)
	}
	if !strings.Contains(err.Error(), "breaker#nosuch") {
		t.Errorf("error %q does not name the pk", err)
	}
}

func testRoundTrip(t *testing.T, s store.Store) {
	for _, tc := range []struct {
		name string
		item store.Item
	}{
		{"pk only", store.Item{store.PK: "a"}},
		{"ints", store.Item{store.PK: "ints", "zero": int64(0), "one": int64(1), "neg": int64(-42),
			"max": int64(math.MaxInt64), "min": int64(math.MinInt64), "2^53+1": int64(1<<53 + 1), "plain int": 7}},
		{"fractions", store.Item{store.PK: "fractions", "half": 0.5, "neg": -2.25, "tenth": 0.1, "tiny": 1e-7,
			"sum": 0.1 + 0.2, "long": 123456789.123456789, "big": 1.5e125, "small": 5e-130, "next": math.Nextafter(1, 2)}},
		{"whole floats", store.Item{store.PK: "whole", "three": 3.0, "neg": -8.0, "2^60": float64(1 << 60), "1e20": 1e20}},
		// Numbers neither int64 nor float64 holds exactly come back digit for digit.
		{"exact decimals", store.Item{store.PK: "exact", "21 digits": store.Number("1.00000000000000000001"),
			"beyond int64": store.Number("99999999999999999999"), "38 digits": store.Number("-1234567890123456789.0123456789012345678")}},
		{"strings", store.Item{store.PK: "strings", "ascii": "open", "unicode": "héllo wörld ✓ 日本語 🚀",
			"empty": "", "spaces": "  padded  ", "newline": "a\nb", "quote": `"{}"`, "digits": "0012"}},
		{"unicode pk", store.Item{store.PK: "rl#клиент-🚀", "tokens": 19.5}},
		{"odd names", store.Item{store.PK: "names", "a.b": "dot", "a b": "space", "#x": "hash", ":y": "colon",
			"status": "reserved", "size": int64(3), "ttl": int64(1767225600)}},
		{"rate limit", store.Item{store.PK: "rl#client-1", "tokens": 19.0, "updated_at": int64(1767225600123)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustPut(t, s, tc.item)
			sameItem(t, "Get after Put", mustGet(t, s, tc.item.PK()), tc.item)
			for k, v := range tc.item {
				if f, ok := v.(float64); ok {
					got, ok := mustGet(t, s, tc.item.PK()).Float(k)
					if !ok || got != f {
						t.Errorf("Float(%q) = %v, %v; want %v", k, got, ok, f)
					}
				}
			}
		})
	}
}

func testPutReplaces(t *testing.T, s store.Store) {
	mustPut(t, s, store.Item{store.PK: "x", "a": "1", "b": int64(2)})
	mustPut(t, s, store.Item{store.PK: "x", "a": "3"})
	sameItem(t, "after second Put", mustGet(t, s, "x"), store.Item{store.PK: "x", "a": "3"})
}

func testItemsAreCopies(t *testing.T, s store.Store) {
	in := store.Item{store.PK: "x", "a": "1"}
	mustPut(t, s, in)
	in["a"] = "changed after put"
	got := mustGet(t, s, "x")
	got["a"] = "changed after get"
	sameItem(t, "stored item", mustGet(t, s, "x"), store.Item{store.PK: "x", "a": "1"})
}

func testInvalidItems(t *testing.T, s store.Store) {
	for name, it := range map[string]store.Item{
		"no pk":     {"a": "1"},
		"bool":      {store.PK: "bad-bool", "b": true},
		"NaN":       {store.PK: "bad-nan", "f": math.NaN()},
		"overflow":  {store.PK: "bad-big", "f": 1e200},
		"underflow": {store.PK: "bad-small", "f": 1e-200},
		"bad utf8":  {store.PK: "bad-utf8", "s": "\xff\xfe"},
		"too large": {store.PK: "bad-large", "s": strings.Repeat("x", store.MaxItemBytes)},
		"too large in a list": {store.PK: "bad-large-list", "l": store.List{strings.Repeat("x", store.MaxItemBytes/2),
			store.Binary(strings.Repeat("y", store.MaxItemBytes/2))}},
		"nil":               {store.PK: "bad-nil", "v": nil},
		"plain slice":       {store.PK: "bad-slice", "v": []any{"a"}},
		"empty set":         {store.PK: "bad-empty-set", "v": store.StringSet{}},
		"repeated string":   {store.PK: "bad-ss", "v": store.StringSet{"a", "b", "a"}},
		"repeated number":   {store.PK: "bad-ns", "v": store.NumberSet{"1", "1.0"}},
		"repeated binary":   {store.PK: "bad-bs", "v": store.BinarySet{{1}, {1}}},
		"bad number in set": {store.PK: "bad-ns-text", "v": store.NumberSet{"0x10"}},
		"bad utf8 in a map": {store.PK: "bad-map", "v": store.Map{"k": "\xff"}},
		"bool in a list":    {store.PK: "bad-list", "v": store.List{true}},
		"nested 33 levels":  {store.PK: "bad-deep", "v": nested(33)},
		// DynamoDB refuses a write whose index key it cannot take.
		"empty index key":            {store.PK: "bad-ix-empty", store.IndexAuditSubject.Attr: ""},
		"index key over 2048 bytes":  {store.PK: "bad-ix-long", store.IndexAuditActor.Attr: strings.Repeat("a", store.MaxIndexKeyBytes+1)},
		"number as an index key":     {store.PK: "bad-ix-number", store.IndexAuditDay.Attr: int64(20261201)},
		"indexed pk over 1024 bytes": {store.PK: "bad-ix-pk" + strings.Repeat("p", store.MaxIndexedPKBytes), store.IndexOverrides.Attr: "breaker"},
	} {
		t.Run(name, func(t *testing.T) {
			err := s.Put(ctx(t), it, store.Always())
			if !errors.Is(err, store.ErrInvalidItem) {
				t.Fatalf("Put(%s) = %v, want ErrInvalidItem", name, err)
			}
			if pk := it.PK(); pk != "" && state(t, s, pk) != nil {
				t.Errorf("invalid item %q was written", pk)
			}
		})
	}
	t.Run("index keys at their limits", func(t *testing.T) {
		it := store.Item{store.PK: "ix-limits" + strings.Repeat("p", store.MaxIndexedPKBytes-len("ix-limits")),
			store.IndexAuditActor.Attr: strings.Repeat("a", store.MaxIndexKeyBytes), store.IndexAuditSubject.Attr: "s", "empty": ""}
		mustPut(t, s, it)
		sameItem(t, "item with index keys at their limits", mustGet(t, s, it.PK()), it)
	})
	t.Run("bad condition", func(t *testing.T) {
		err := s.Put(ctx(t), store.Item{store.PK: "bad-cond"}, store.IfEquals("v", true))
		if !errors.Is(err, store.ErrInvalidItem) {
			t.Fatalf("Put with a bool condition value = %v, want ErrInvalidItem", err)
		}
		if state(t, s, "bad-cond") != nil {
			t.Error("item written despite an invalid condition")
		}
	})
}

// nested is a list holding a list … depth levels deep.
func nested(depth int) any {
	var v any = "leaf"
	for range depth {
		v = store.List{v}
	}
	return v
}

// sameValues reports, for each attribute of want, whether got holds a value
// of the same DynamoDB type equal to it (store.Equal: sets in any order,
// which is how DynamoDB returns them).
func sameValues(t *testing.T, what string, got, want store.Item) {
	t.Helper()
	if !slices.Equal(got.Keys(), want.Keys()) {
		t.Errorf("%s: attributes %v, want %v", what, got.Keys(), want.Keys())
	}
	for k, w := range want {
		g := got[k]
		if TypeOf(g) != TypeOf(w) || !store.Equal(g, w) {
			t.Errorf("%s: %s = %s %#v, want %s %#v", what, k, TypeOf(g), g, TypeOf(w), w)
		}
	}
}

// testEveryType writes an item holding every one of DynamoDB's ten
// attribute types (nested lists and maps included) and reads it back by Get
// and Scan; writes it back whole; and conditions writes on each attribute.
func testEveryType(t *testing.T, s store.Store) {
	attrs := map[string]Attr{store.PK: {Type: "S", Text: "types#1"}}
	for k, v := range EveryType {
		attrs[k] = v
	}
	want := RawItem(t, attrs)
	mustPut(t, s, want)
	got := mustGet(t, s, "types#1")
	sameValues(t, "Get", got, want)
	var scanned []store.Item
	for it, err := range s.Scan(ctx(t), store.ScanQuery{Prefix: "types#"}) {
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		scanned = append(scanned, it)
	}
	if len(scanned) != 1 {
		t.Fatalf("Scan found %d items, want 1", len(scanned))
	}
	sameValues(t, "Scan", scanned[0], want)

	// What was read is written back whole.
	if err := s.Put(ctx(t), got, store.IfPresent()); err != nil {
		t.Fatalf("Put of the item as read: %v", err)
	}
	sameValues(t, "Get after rewrite", mustGet(t, s, "types#1"), want)

	// A condition on each attribute holds for the value as stored (a set in
	// another order included) and fails for another value or another type.
	others := map[string][]any{
		"t_s":    {"other", store.StringSet{"note"}},
		"t_n":    {42.25, "42.5"},
		"t_b":    {store.Binary{0, 1, 2}, store.BinarySet{{0, 1, 2, 255}}},
		"t_bool": {store.Bool(false), int64(1)},
		"t_null": {store.Bool(true), ""},
		"t_l":    {store.List{"a"}, store.StringSet{"a"}},
		"t_m":    {store.Map{"owner": "team-a"}, store.List{}},
		"t_ss":   {store.StringSet{"blue"}, store.List{"blue", "green"}},
		"t_ns":   {store.NumberSet{"7", "0.5"}, store.List{int64(7), 0.25}},
		"t_bs":   {store.BinarySet{{0}}, store.Binary("hi")},
	}
	reversed := map[string]any{
		"t_ss": store.StringSet{"green", "blue"},
		"t_ns": store.NumberSet{"0.25", "7"},
		"t_bs": store.BinarySet{{0}, []byte("hi")},
	}
	for k := range EveryType {
		t.Run(k, func(t *testing.T) {
			for _, v := range append([]any{got[k]}, reversed[k]) {
				if v == nil {
					continue
				}
				if err := s.Put(ctx(t), got, store.IfEquals(k, v)); err != nil {
					t.Errorf("Put if %s = %#v (as stored): %v", k, v, err)
				}
			}
			for _, v := range others[k] {
				err := s.Delete(ctx(t), "types#1", store.IfEquals(k, v))
				if !errors.Is(err, store.ErrConditionFailed) {
					t.Errorf("Delete if %s = %s %#v: %v, want ErrConditionFailed", k, TypeOf(v), v, err)
				}
				var ce *store.ConditionError
				if errors.As(err, &ce) && ce.Current != nil {
					sameValues(t, "ConditionError.Current", ce.Current, want)
				}
			}
		})
	}
	sameValues(t, "Get after the conditional writes", mustGet(t, s, "types#1"), want)
}

// condCase is one condition applied to one starting state.
type condCase struct {
	name  string
	start store.Item // nil: absent
	cond  store.Condition
	holds bool
}

func condCases(pk string) []condCase {
	v1 := store.Item{store.PK: pk, "v": int64(1), "status": "open", "f": 0.5, "big": 9e125,
		"exact": store.Number("1.00000000000000000001")}
	return []condCase{
		{"always/absent", nil, store.Always(), true},
		{"always/present", v1, store.Always(), true},
		{"ifabsent/absent", nil, store.IfAbsent(), true},
		{"ifabsent/present", v1, store.IfAbsent(), false},
		{"ifpresent/absent", nil, store.IfPresent(), false},
		{"ifpresent/present", v1, store.IfPresent(), true},
		{"ifequals/absent", nil, store.IfEquals("v", int64(1)), false},
		{"ifequals/match", v1, store.IfEquals("v", int64(1)), true},
		{"ifequals/match plain int", v1, store.IfEquals("v", 1), true},
		{"ifequals/match as float", v1, store.IfEquals("v", 1.0), true},
		{"ifequals/match fraction", v1, store.IfEquals("f", 0.5), true},
		{"ifequals/match string", v1, store.IfEquals("status", "open"), true},
		{"ifequals/mismatch", v1, store.IfEquals("v", int64(2)), false},
		{"ifequals/type mismatch", v1, store.IfEquals("v", "1"), false},
		{"ifequals/missing attribute", v1, store.IfEquals("w", int64(1)), false},
		// A number read back is matched exactly as stored, however large.
		{"ifequals/match as read, beyond int64", v1, store.IfEquals("big", 9e125), true},
		{"ifequals/match exact number as read", v1, store.IfEquals("exact", store.Number("1.00000000000000000001")), true},
		{"ifequals/exact number rounded does not match", v1, store.IfEquals("exact", 1.0), false},
		{"ifequals/exact number rounded as int does not match", v1, store.IfEquals("exact", int64(1)), false},
		{"ifpresentwithout/absent", nil, store.IfPresentWithout("w"), false},
		{"ifpresentwithout/attribute missing", v1, store.IfPresentWithout("w"), true},
		{"ifpresentwithout/attribute present", v1, store.IfPresentWithout("v"), false},
		{"ifpresentwithout/string attribute present", v1, store.IfPresentWithout("status"), false},
	}
}

func checkConditionError(t *testing.T, err error, pk string, start store.Item) {
	t.Helper()
	if !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("err = %v, want ErrConditionFailed", err)
	}
	var ce *store.ConditionError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v is not a *store.ConditionError", err)
	}
	if ce.PK != pk {
		t.Errorf("ConditionError.PK = %q, want %q", ce.PK, pk)
	}
	// Current is optional (the backend may not be told), but when given it
	// must be the item as stored.
	if start == nil && ce.Current != nil {
		t.Errorf("ConditionError.Current = %s for an absent item", show(ce.Current))
	}
	if start != nil && ce.Current != nil {
		sameItem(t, "ConditionError.Current", ce.Current, start)
	}
	if errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a failed condition is reported as unavailable: %v", err)
	}
}

func testPutConditions(t *testing.T, s store.Store) {
	for i, tc := range condCases("") {
		t.Run(tc.name, func(t *testing.T) {
			pk := fmt.Sprintf("put-cond-%02d", i)
			if tc.start != nil {
				start := tc.start.Clone()
				start[store.PK] = pk
				tc.start = start
				mustPut(t, s, tc.start)
			}
			next := store.Item{store.PK: pk, "v": int64(99), "written": "yes"}
			err := s.Put(ctx(t), next, tc.cond)
			if tc.holds {
				if err != nil {
					t.Fatalf("Put with %v: %v", tc.cond, err)
				}
				sameItem(t, "after Put", state(t, s, pk), next)
				return
			}
			checkConditionError(t, err, pk, tc.start)
			sameItem(t, "after refused Put (nothing written)", state(t, s, pk), tc.start)
		})
	}
}

func testDeleteConditions(t *testing.T, s store.Store) {
	for i, tc := range condCases("") {
		t.Run(tc.name, func(t *testing.T) {
			pk := fmt.Sprintf("del-cond-%02d", i)
			if tc.start != nil {
				start := tc.start.Clone()
				start[store.PK] = pk
				tc.start = start
				mustPut(t, s, tc.start)
			}
			err := s.Delete(ctx(t), pk, tc.cond)
			if tc.holds {
				if err != nil {
					t.Fatalf("Delete with %v: %v", tc.cond, err)
				}
				if got := state(t, s, pk); got != nil {
					t.Errorf("item still there after Delete: %s", show(got))
				}
				return
			}
			checkConditionError(t, err, pk, tc.start)
			sameItem(t, "after refused Delete (nothing deleted)", state(t, s, pk), tc.start)
		})
	}
}

// testConditionAttributeNames checks that attribute names which are not
// plain identifiers (reserved words, dots, spaces, expression syntax) work in
// conditions.
func testConditionAttributeNames(t *testing.T, s store.Store) {
	for i, name := range []string{"status", "size", "name", "a.b", "a b", "#x", ":y", "pk", "ttl", "ü"} {
		t.Run(name, func(t *testing.T) {
			pk := fmt.Sprintf("names-%d", i)
			mustPut(t, s, store.Item{store.PK: pk, name: pkOr(name, pk, "v1")})
			err := s.Put(ctx(t), store.Item{store.PK: pk, name: pkOr(name, pk, "v2")}, store.IfEquals(name, pkOr(name, pk, "v1")))
			if err != nil {
				t.Fatalf("IfEquals(%q) on a matching item: %v", name, err)
			}
			err = s.Put(ctx(t), store.Item{store.PK: pk, name: pkOr(name, pk, "v3")}, store.IfEquals(name, "nope"))
			if !errors.Is(err, store.ErrConditionFailed) {
				t.Fatalf("IfEquals(%q) on a mismatching item: %v", name, err)
			}
		})
	}
}

// pkOr returns pk when the attribute is the pk itself (its value is fixed),
// else v.
func pkOr(name, pk, v string) string {
	if name == store.PK {
		return pk
	}
	return v
}

func collect(t *testing.T, s store.Store, q store.ScanQuery) []store.Item {
	t.Helper()
	var out []store.Item
	for it, err := range s.Scan(ctx(t), q) {
		if err != nil {
			t.Fatalf("Scan(%+v): %v", q, err)
		}
		out = append(out, it)
	}
	return out
}

func pks(items []store.Item) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.PK())
	}
	slices.Sort(out)
	return out
}

func testScanPrefix(t *testing.T, s store.Store) {
	all := []string{"rl#a", "rl#b", "rl#", "rl", "rlx", "r", "rl#a#b", "breaker#x", "ü#1", "üx", "Rl#a"}
	for _, pk := range all {
		mustPut(t, s, store.Item{store.PK: pk, "n": int64(len(pk))})
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"rl#", []string{"rl#", "rl#a", "rl#a#b", "rl#b"}},
		{"rl#a", []string{"rl#a", "rl#a#b"}},
		{"rl", []string{"rl", "rl#", "rl#a", "rl#a#b", "rl#b", "rlx"}},
		{"breaker#", []string{"breaker#x"}},
		{"ü#", []string{"ü#1"}},
		{"nothing#", nil},
		{"", sorted(all)},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			got := pks(collect(t, s, store.ScanQuery{Prefix: tc.prefix, PageSize: 2}))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Scan(%q) = %q, want %q", tc.prefix, got, tc.want)
			}
		})
	}
	// Scanned items carry all their attributes.
	for _, it := range collect(t, s, store.ScanQuery{Prefix: "rl#a#"}) {
		sameItem(t, "scanned item", it, store.Item{store.PK: "rl#a#b", "n": int64(6)})
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func testScanMany(t *testing.T, s store.Store, segments int) {
	const matching, others = 230, 20
	want := make([]string, 0, matching)
	for i := range matching {
		pk := fmt.Sprintf("item#%04d", i)
		want = append(want, pk)
		mustPut(t, s, store.Item{store.PK: pk, "i": int64(i)})
	}
	for i := range others {
		mustPut(t, s, store.Item{store.PK: fmt.Sprintf("other#%04d", i)})
	}
	var (
		calls       atomic.Int64
		maxExamined atomic.Int64
	)
	q := store.ScanQuery{Prefix: "item#", PageSize: 7, Segments: segments, Progress: func(n int) {
		calls.Add(1)
		for {
			old := maxExamined.Load()
			if int64(n) <= old || maxExamined.CompareAndSwap(old, int64(n)) {
				return
			}
		}
	}}
	items := collect(t, s, q)
	got := pks(items)
	if !slices.Equal(got, want) {
		t.Fatalf("Scan with %d segment(s) returned %d items (want %d); first differences: %v",
			segments, len(got), len(want), firstDiff(got, want))
	}
	for _, it := range items {
		i, _ := it.Int("i")
		if it.PK() != fmt.Sprintf("item#%04d", i) {
			t.Fatalf("item %s carries i=%d", it.PK(), i)
		}
	}
	if calls.Load() < 2 {
		t.Errorf("Progress called %d times over at least %d pages", calls.Load(), matching/7)
	}
	if m := maxExamined.Load(); m < matching || m > matching+others {
		t.Errorf("Progress reported %d items examined, want between %d and %d", m, matching, matching+others)
	}
}

func firstDiff(got, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, "missing "+w)
		}
	}
	seen := map[string]bool{}
	for _, g := range got {
		if seen[g] {
			out = append(out, "duplicate "+g)
		}
		seen[g] = true
	}
	return out[:min(len(out), 5)]
}

func testScanStopsEarly(t *testing.T, s store.Store) {
	for i := range 40 {
		mustPut(t, s, store.Item{store.PK: fmt.Sprintf("e#%02d", i)})
	}
	for _, segments := range []int{1, 4} {
		n := 0
		for _, err := range s.Scan(ctx(t), store.ScanQuery{Prefix: "e#", PageSize: 3, Segments: segments}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if n == 5 {
				break
			}
		}
		if n != 5 {
			t.Fatalf("segments %d: loop ran %d times, want 5", segments, n)
		}
	}
	// The store still works after abandoned scans.
	if got := len(collect(t, s, store.ScanQuery{Prefix: "e#"})); got != 40 {
		t.Errorf("full scan after early stops found %d items, want 40", got)
	}
}

func testScanWritesInLoop(t *testing.T, s store.Store) {
	for i := range 10 {
		mustPut(t, s, store.Item{store.PK: fmt.Sprintf("w#%02d", i), "seen": int64(0)})
	}
	for it, err := range s.Scan(ctx(t), store.ScanQuery{Prefix: "w#", PageSize: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		next := it.Clone()
		next["seen"] = int64(1)
		if err := s.Put(ctx(t), next, store.IfEquals("seen", int64(0))); err != nil {
			t.Fatalf("Put inside the scan loop: %v", err)
		}
	}
	for _, it := range collect(t, s, store.ScanQuery{Prefix: "w#"}) {
		if v, _ := it.Int("seen"); v != 1 {
			t.Errorf("%s not updated in the scan loop", it.PK())
		}
	}
}

func testCanceledContext(t *testing.T, s store.Store) {
	mustPut(t, s, store.Item{store.PK: "c#1"})
	cctx, cancel := context.WithCancel(ctx(t))
	cancel()
	if err := s.Put(cctx, store.Item{store.PK: "c#2"}, store.Always()); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a canceled context: %v, want context.Canceled", err)
	}
	if state(t, s, "c#2") != nil {
		t.Error("Put with a canceled context wrote the item")
	}
	if _, err := s.Get(cctx, "c#1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context: %v, want context.Canceled", err)
	}
	if err := s.Delete(cctx, "c#1", store.Always()); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a canceled context: %v, want context.Canceled", err)
	}
	if state(t, s, "c#1") == nil {
		t.Error("Delete with a canceled context deleted the item")
	}
	for _, segments := range []int{1, 4} {
		var gotErr error
		for _, err := range s.Scan(cctx, store.ScanQuery{Prefix: "c#", Segments: segments}) {
			if err != nil {
				gotErr = err
				break
			}
		}
		if !errors.Is(gotErr, context.Canceled) {
			t.Errorf("Scan (%d segments) with a canceled context: %v, want context.Canceled", segments, gotErr)
		}
	}
}

func testRaceIfAbsent(t *testing.T, s store.Store) {
	const racers = 16
	var (
		wg      sync.WaitGroup
		winners atomic.Int64
		winner  atomic.Int64
		start   = make(chan struct{})
		errs    = make(chan error, racers)
	)
	for i := range racers {
		wg.Go(func() {
			<-start
			err := s.Put(ctx(t), store.Item{store.PK: "lock#one", "owner": int64(i)}, store.IfAbsent())
			switch {
			case err == nil:
				winners.Add(1)
				winner.Store(int64(i))
			case errors.Is(err, store.ErrConditionFailed):
			default:
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("racer failed other than by its condition: %v", err)
	}
	if n := winners.Load(); n != 1 {
		t.Fatalf("%d racers won IfAbsent, want exactly 1", n)
	}
	if owner, _ := mustGet(t, s, "lock#one").Int("owner"); owner != winner.Load() {
		t.Errorf("stored owner %d, but racer %d won", owner, winner.Load())
	}
}

// Increment is one compare-and-set increment of the "count" attribute of the
// item under pk, guarded by its "version": the LLD's optimistic update. It
// returns whether the write won; a lost race is not an error.
func Increment(ctx context.Context, s store.Store, pk string) (bool, error) {
	cur, err := s.Get(ctx, pk)
	var cond store.Condition
	var count, version int64
	switch {
	case errors.Is(err, store.ErrNotFound):
		cond = store.IfAbsent()
	case err != nil:
		return false, err
	default:
		count, _ = cur.Int("count")
		version, _ = cur.Int("version")
		cond = store.IfEquals("version", version)
	}
	err = s.Put(ctx, store.Item{store.PK: pk, "count": count + 1, "version": version + 1}, cond)
	if errors.Is(err, store.ErrConditionFailed) {
		return false, nil
	}
	return err == nil, err
}

func testRaceCompareAndSet(t *testing.T, s store.Store) {
	const (
		workers     = 8
		perWorker   = 6
		maxAttempts = 2000
	)
	var (
		wg        sync.WaitGroup
		successes atomic.Int64
		conflicts atomic.Int64
		start     = make(chan struct{})
		errs      = make(chan error, workers)
	)
	for range workers {
		wg.Go(func() {
			<-start
			won := 0
			for attempt := 0; won < perWorker; attempt++ {
				if attempt == maxAttempts {
					errs <- fmt.Errorf("worker made %d increments in %d attempts", won, maxAttempts)
					return
				}
				ok, err := Increment(ctx(t), s, "counter#cas")
				if err != nil {
					errs <- err
					return
				}
				if ok {
					won++
					successes.Add(1)
				} else {
					conflicts.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	final := mustGet(t, s, "counter#cas")
	count, _ := final.Int("count")
	version, _ := final.Int("version")
	if count != successes.Load() || version != successes.Load() {
		t.Errorf("count %d, version %d after %d successful increments (%d conflicts): lost update",
			count, version, successes.Load(), conflicts.Load())
	}
	if successes.Load() != workers*perWorker {
		t.Errorf("%d successful increments, want %d", successes.Load(), workers*perWorker)
	}
}

func testDescribe(t *testing.T, s store.Store) {
	if strings.TrimSpace(s.Describe()) == "" {
		t.Error("Describe is empty")
	}
}
