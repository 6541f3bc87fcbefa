package termtest

import (
	"testing"
	"unicode/utf8"
)

// AssertSafe fails the test when out (what koshactl printed on one
// stream) holds anything a terminal would act on: a C0 control other than
// newline and tab, DEL, a C1 control, a bidi control (U+061C, U+200E,
// U+200F, U+202A–U+202E, U+2066–U+2069), U+2028/U+2029, or a byte that is
// not UTF-8. It is written without package textsafe on purpose, so it checks
// that rule rather than repeating it.
func AssertSafe(t testing.TB, name, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		bad := (r == utf8.RuneError && n == 1) ||
			(r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) ||
			r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
			r == 0x2028 || r == 0x2029
		if bad {
			lo, hi := max(i-20, 0), min(i+20, len(out))
			t.Errorf("%s: raw %U at byte %d, near %q", name, r, i, out[lo:hi])
			return
		}
		i += n
	}
}
