package store_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

func TestNumberKeepsWhatFloat64Cannot(t *testing.T) {
	for text, want := range map[string]any{
		"1.5":                 1.5,
		"9e125":               9e125,
		"123456789012345.5":   123456789012345.5,
		"0.30000000000000004": 0.30000000000000004, // 0.1+0.2: 17 digits that float64 formats back exactly
		// float64 0.1 to 34 digits: not what 0.1 formats as, so kept.
		"0.1000000000000000055511151231257827": store.Number("0.1000000000000000055511151231257827"),
		"1.00000000000000000001":               store.Number("1.00000000000000000001"),
		"99999999999999999999":                 store.Number("99999999999999999999"),
		"9223372036854775808":                  store.Number("9223372036854775808"),
	} {
		got, err := store.ParseNumber(text)
		if err != nil || got != want {
			t.Errorf("ParseNumber(%q) = %T(%v), %v; want %T(%v)", text, got, got, err, want, want)
		}
	}
	n := store.Number("1.00000000000000000001")
	if !store.Equal(n, store.Number("1.000000000000000000010")) || store.Equal(n, 1.0) || store.Equal(n, int64(1)) || store.Equal(n, "1.00000000000000000001") {
		t.Error("a Number compares by exact value, never with a string")
	}
	if f, ok := (store.Item{"n": n}).Float("n"); !ok || f != 1 {
		t.Errorf("Float = %v, %v", f, ok)
	}
	for _, bad := range []store.Number{"abc", "0x10", "1e126", "1e-131", "1.234567890123456789012345678901234567891", ""} {
		if err := (store.Item{store.PK: "x", "n": bad}).Validate(); !errors.Is(err, store.ErrInvalidItem) {
			t.Errorf("Validate(%q) = %v, want ErrInvalidItem", bad, err)
		}
	}
	for in, want := range map[store.Number]string{"1.00000000000000000001": "1.00000000000000000001", "+.5": "0.5",
		"-007.": "-7", "12e3": "12e3"} {
		b, err := json.Marshal(in)
		if err != nil || string(b) != want || !json.Valid(b) {
			t.Errorf("json.Marshal(%q) = %s, %v; want %s", in, b, err, want)
		}
	}
}
