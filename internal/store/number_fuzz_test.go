package store

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

// FuzzParseNumber feeds arbitrary number text to the parser both backends
// use for stored numbers (DynamoDB's N values, the embedded store's JSON).
// Whatever it accepts must be an int64, a float64 or a Number that formats to text
// which parses back to an equal number, and that text must be canonical:
// formatting the re-parsed number gives the same text. Whatever it refuses
// must say so with strconv's error, never a panic.
//
//	go test -run '^$' -fuzz '^FuzzParseNumber$' -fuzztime 20s ./internal/store
func FuzzParseNumber(f *testing.F) {
	for _, seed := range []string{
		"0", "-0", "42", "-17", "3.25", "1e-130", "9.9999999999999999999e125",
		"9223372036854775807", "9223372036854775808", "-9223372036854775809",
		"1.00000000000000000001", "99999999999999999999", "12345678901234567.5",
		"16.0", "1E+2", "0x1p4", "1_000", "NaN", "Inf", "-Infinity", "1e400", "", " 1", "abc",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseNumber(s)
		if err != nil {
			var ne *strconv.NumError
			if !errors.As(err, &ne) {
				t.Fatalf("ParseNumber(%q) error %v is not a strconv.NumError", s, err)
			}
			return
		}
		switch v.(type) {
		case int64, float64, Number:
		default:
			t.Fatalf("ParseNumber(%q) = %T, want int64, float64 or Number", s, v)
		}
		text, ok := FormatNumber(v)
		if !ok {
			t.Fatalf("FormatNumber(%#v) refused a parsed number", v)
		}
		back, err := ParseNumber(text)
		if err != nil {
			t.Fatalf("ParseNumber(%q) = %#v, formatted as %q, which does not parse: %v", s, v, text, err)
		}
		if !sameNumber(v, back) {
			t.Fatalf("ParseNumber(%q) = %#v, formatted as %q, parsed back as %#v", s, v, text, back)
		}
		if again, _ := FormatNumber(back); again != text {
			t.Fatalf("formatting is not canonical: %q then %q", text, again)
		}
	})
}

// sameNumber is Equal with NaN equal to itself: ParseNumber accepts "NaN"
// (Validate refuses to store it).
func sameNumber(a, b any) bool {
	af, aok := Item{"x": a}.Float("x")
	bf, bok := Item{"x": b}.Float("x")
	if aok && bok && math.IsNaN(af) && math.IsNaN(bf) {
		return true
	}
	return Equal(a, b)
}
