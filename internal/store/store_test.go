package store

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestThrottledIsUnavailable(t *testing.T) {
	err := fmt.Errorf("put %q: %w", "rl#a", ErrThrottled)
	if !errors.Is(err, ErrThrottled) {
		t.Error("wrapped ErrThrottled does not match ErrThrottled")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Error("wrapped ErrThrottled does not match ErrUnavailable")
	}
	if errors.Is(fmt.Errorf("x: %w", ErrUnavailable), ErrThrottled) {
		t.Error("ErrUnavailable matches ErrThrottled")
	}
	for _, other := range []error{ErrNotFound, ErrConditionFailed, ErrTableMissing, ErrCredentials, ErrInvalidItem} {
		if errors.Is(ErrThrottled, other) {
			t.Errorf("ErrThrottled matches %v", other)
		}
	}
}

func TestConditionErrorIs(t *testing.T) {
	var err error = &ConditionError{PK: "breaker#db"}
	if !errors.Is(fmt.Errorf("put: %w", err), ErrConditionFailed) {
		t.Error("ConditionError does not match ErrConditionFailed")
	}
	if !strings.Contains(err.Error(), "breaker#db") {
		t.Errorf("message %q does not name the pk", err)
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("x", MaxPKBytes+1)
	for _, tc := range []struct {
		name string
		item Item
		ok   bool
	}{
		{"minimal", Item{PK: "a"}, true},
		{"all types", Item{PK: "a", "s": "x", "i": int64(1), "n": 2, "f": 0.5}, true},
		{"empty string value", Item{PK: "a", "s": ""}, true},
		{"zero", Item{PK: "a", "f": 0.0}, true},
		{"largest float", Item{PK: "a", "f": math.Nextafter(MaxNumber, 0)}, true},
		{"smallest float", Item{PK: "a", "f": -1e-130}, true},
		{"longest pk", Item{PK: long[:MaxPKBytes]}, true},
		{"longest pk of an indexed item", Item{PK: long[:MaxIndexedPKBytes], IndexOverrides.Attr: "breaker"}, true},
		{"indexed item with a pk longer than a sort key", Item{PK: long[:MaxIndexedPKBytes+1], IndexAuditDay.Attr: "2026-12-01"}, false},
		{"longest index key", Item{PK: "a", IndexAuditSubject.Attr: long[:MaxIndexKeyBytes]}, true},
		{"index key longer than a partition key", Item{PK: "a", IndexAuditSubject.Attr: long[:MaxIndexKeyBytes+1]}, false},
		{"empty index key", Item{PK: "a", IndexAuditActor.Attr: ""}, false},
		{"index key not a string", Item{PK: "a", IndexOverrides.Attr: Binary("breaker")}, false},
		{"longest pk of an item in an index with its own sort key", Item{PK: long[:MaxPKBytes], IndexLists.Attr: "breaker", IndexLists.Sort: "x"}, true},
		{"longest sort key", Item{PK: "a", IndexLists.Attr: "audit#0", IndexLists.Sort: long[:MaxSortKeyBytes]}, true},
		{"sort key longer than DynamoDB's", Item{PK: "a", IndexLists.Attr: "audit#0", IndexLists.Sort: long[:MaxSortKeyBytes+1]}, false},
		{"empty sort key", Item{PK: "a", IndexLists.Sort: ""}, false},
		{"sort key not a string, without the index's key", Item{PK: "a", IndexLists.Sort: int64(1)}, false},
		{"empty string outside the pk and index keys", Item{PK: "a", "actor": ""}, true},
		{"no pk", Item{"s": "x"}, false},
		{"empty pk", Item{PK: ""}, false},
		{"numeric pk", Item{PK: int64(1)}, false},
		{"pk too long", Item{PK: long}, false},
		{"bool", Item{PK: "a", "b": true}, false},
		{"nil", Item{PK: "a", "b": nil}, false},
		{"int32", Item{PK: "a", "b": int32(1)}, false},
		{"NaN", Item{PK: "a", "f": math.NaN()}, false},
		{"Inf", Item{PK: "a", "f": math.Inf(-1)}, false},
		{"overflow", Item{PK: "a", "f": 1e126}, false},
		{"underflow", Item{PK: "a", "f": 1e-131}, false},
		{"empty name", Item{PK: "a", "": "x"}, false},
		{"bad utf8 value", Item{PK: "a", "s": "\xff"}, false},
		{"bad utf8 pk", Item{PK: "a\xff"}, false},
		{"bad utf8 name", Item{PK: "a", "\xfe": "x"}, false},
		{"too large", Item{PK: "a", "s": strings.Repeat("y", MaxItemBytes)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.item.Validate()
			if tc.ok && err != nil {
				t.Errorf("Validate: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidItem) {
				t.Errorf("Validate = %v, want ErrInvalidItem", err)
			}
		})
	}
}

func TestNormalizeWidensInt(t *testing.T) {
	in := Item{PK: "a", "n": 7, "s": "x"}
	out := Normalize(in)
	if v, ok := out["n"].(int64); !ok || v != 7 {
		t.Errorf("n = %#v, want int64(7)", out["n"])
	}
	if _, ok := in["n"].(int); !ok {
		t.Error("Normalize changed its input")
	}
}

func TestNumberRoundTrip(t *testing.T) {
	for _, v := range []any{
		int64(0), int64(1), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), int64(1<<53 + 1),
		0.5, -2.25, 0.1, 1e-7, 123456789.123456789, 1.5e125, 5e-130, math.Nextafter(1, 2),
	} {
		s, ok := FormatNumber(v)
		if !ok {
			t.Fatalf("FormatNumber(%v) not ok", v)
		}
		got, err := ParseNumber(s)
		if err != nil {
			t.Fatalf("ParseNumber(%q): %v", s, err)
		}
		if got != v {
			t.Errorf("%#v -> %q -> %#v", v, s, got)
		}
	}
	// A whole float reads back as the integer it holds.
	s, _ := FormatNumber(3.0)
	if got, _ := ParseNumber(s); got != int64(3) {
		t.Errorf("3.0 -> %q -> %#v, want int64(3)", s, got)
	}
	// Negative zero is stored as "0" (DynamoDB has no signed zero), so its
	// text is the same before and after a round trip.
	if s, _ := FormatNumber(math.Copysign(0, -1)); s != "0" {
		t.Errorf("-0.0 -> %q, want \"0\"", s)
	}
	if _, err := ParseNumber("abc"); err == nil {
		t.Error("ParseNumber(abc) succeeded")
	}
}

func FuzzNumberRoundTrip(f *testing.F) {
	for _, seed := range []float64{0, 0.5, -1.25, 1e-100, 1e100, 12345.678} {
		f.Add(seed, int64(seed))
	}
	f.Fuzz(func(t *testing.T, x float64, i int64) {
		s, _ := FormatNumber(i)
		if got, err := ParseNumber(s); err != nil || got != i {
			t.Fatalf("int64 %d -> %q -> %#v, %v", i, s, got, err)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		s, _ = FormatNumber(x)
		got, err := ParseNumber(s)
		if err != nil {
			t.Fatalf("float %v -> %q: %v", x, s, err)
		}
		f, ok := Item{"v": got}.Float("v")
		if !ok || (f != x && !(x == 0 && f == 0)) {
			t.Fatalf("float %v -> %q -> %#v", x, s, got)
		}
		if x != math.Trunc(x) {
			if _, isFloat := got.(float64); !isFloat {
				t.Fatalf("fractional %v read back as %T", x, got)
			}
		}
	})
}

func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{"x", "x", true},
		{"x", "y", false},
		{"1", int64(1), false},
		{int64(1), 1.0, true},
		{int64(1), int64(1), true},
		{1, int64(1), true},
		{int64(2), 2, true},
		{2, 2.5, false},
		{int64(math.MaxInt64), int64(math.MaxInt64 - 1), false}, // equal as float64, not as ints
		{0.5, 0.5, true},
		{0.5, int64(0), false},
		{nil, nil, false},
	} {
		if got := Equal(tc.a, tc.b); got != tc.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestConditionHolds(t *testing.T) {
	present := Item{PK: "a", "v": int64(2)}
	for _, tc := range []struct {
		cond             Condition
		absent, onV2, on string
	}{
		{Always(), "y", "y", "always"},
		{IfAbsent(), "y", "n", "item absent"},
		{IfPresent(), "n", "y", "item present"},
		{IfEquals("v", int64(2)), "n", "y", "v = 2"},
		{IfEquals("v", int64(3)), "n", "n", "v = 3"},
		{IfEquals("w", int64(2)), "n", "n", "w = 2"},
	} {
		yn := func(b bool) string {
			if b {
				return "y"
			}
			return "n"
		}
		if got := yn(tc.cond.Holds(nil)); got != tc.absent {
			t.Errorf("%v on absent = %s", tc.cond, got)
		}
		if got := yn(tc.cond.Holds(present)); got != tc.onV2 {
			t.Errorf("%v on present = %s", tc.cond, got)
		}
		if tc.cond.String() != tc.on {
			t.Errorf("String() = %q, want %q", tc.cond.String(), tc.on)
		}
	}
	for _, c := range []Condition{Always(), IfAbsent(), IfPresent(), IfEquals("v", 1), IfEquals("v", "s")} {
		if err := c.Validate(); err != nil {
			t.Errorf("%v.Validate: %v", c, err)
		}
	}
	for _, c := range []Condition{IfEquals("", 1), IfEquals("v", true), IfEquals("v", nil), IfEquals("v", math.NaN())} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidItem) {
			t.Errorf("%v.Validate = %v, want ErrInvalidItem", c, err)
		}
	}
	if !Always().IsAlways() || IfAbsent().IsAlways() {
		t.Error("IsAlways wrong")
	}
	var zero Condition
	if !zero.Holds(nil) || !zero.Holds(present) {
		t.Error("zero Condition is not Always")
	}
}
