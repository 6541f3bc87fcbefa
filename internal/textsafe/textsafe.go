package textsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line renders s for one line of human output: every unsafe character
// (see the package doc), tab and newline included, becomes a visible escape.
// Clean text is returned unchanged, without allocating.
func Line(s string) string { return render(s, false) }

// OneLine renders s, a message that may be wrapped over lines (an error's
// text, a refusal's reason, a step's output), for one line: each run of
// spaces, tabs and newlines becomes one space, none at either end, and the
// rest is rendered by [Line], so a CR, an ESC or a bidi mark is shown as an
// escape, never dropped or folded away. It is the one way an error's text
// is put on a line of output, in a table cell or in a one-line field.
func OneLine(s string) string {
	return Line(strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }), " "))
}

// Text renders s for multi-line human output: like [Line], but newline and
// tab are kept.
func Text(s string) string { return render(s, true) }

// IsSafe reports whether [Line] would return s unchanged.
func IsSafe(s string) bool { return firstUnsafe(s, false) < 0 }

func render(s string, keepLines bool) string {
	i := firstUnsafe(s, keepLines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	appendEscaped(&b, s[i:], keepLines)
	return b.String()
}

// firstUnsafe returns the byte offset of the first character of s that
// needs an escape, or -1.
func firstUnsafe(s string, keepLines bool) int { return scan(s, keepLines, utf8.DecodeRuneInString) }

// scan is firstUnsafe for a string or a byte slice (the [Writer]'s input),
// so neither is copied to be checked.
func scan[T string | []byte](s T, keepLines bool, decode func(T) (rune, int)) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if keepLines && (c == '\n' || c == '\t') {
				i++
				continue
			}
			return i
		}
		r, n := decode(s[i:])
		if unsafeRune(r, n) {
			return i
		}
		i += n
	}
	return -1
}

// unsafeRune reports whether the character r, n bytes long, at or above
// utf8.RuneSelf, needs an escape.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // not UTF-8
		return true
	case r <= 0x9f: // C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// escaper is what appendEscaped writes to: a strings.Builder or a bytes.Buffer.
type escaper interface {
	WriteString(string) (int, error)
	WriteByte(byte) error
}

const hexDigits = "0123456789abcdef"

func appendEscaped(b escaper, s string, keepLines bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c < 0x7f, keepLines && (c == '\n' || c == '\t'):
				_ = b.WriteByte(c)
			case c == '\t':
				_, _ = b.WriteString(`\t`)
			case c == '\n':
				_, _ = b.WriteString(`\n`)
			case c == '\r':
				_, _ = b.WriteString(`\r`)
			default:
				writeHexByte(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeHexByte(b, c)
		case unsafeRune(r, n):
			_, _ = b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				_ = b.WriteByte(hexDigits[(r>>shift)&0xf])
			}
		default:
			_, _ = b.WriteString(s[i : i+n])
		}
		i += n
	}
}

func writeHexByte(b escaper, c byte) {
	_, _ = b.WriteString(`\x`)
	_ = b.WriteByte(hexDigits[c>>4])
	_ = b.WriteByte(hexDigits[c&0xf])
}

// CharError reports the first unsafe character of an input (see [Check]).
type CharError struct {
	// Pos is the character's position, counted in characters from 1 (a byte
	// that is not UTF-8 counts as one character).
	Pos int
	// Escaped is how the character is shown: \x1b, \u202e, \xff.
	Escaped string
	// What names its class: "a control character", "a bidi control",
	// "a line separator" or "a byte that is not UTF-8".
	What string
}

func (e *CharError) Error() string {
	return fmt.Sprintf("%s (%s) at character %d", e.What, e.Escaped, e.Pos)
}

// Check applies the [Line] rule to operator input: it returns a *[CharError]
// for the first character [Line] would escape, or nil.
func Check(s string) error {
	i := firstUnsafe(s, false)
	if i < 0 {
		return nil
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	e := &CharError{Pos: utf8.RuneCountInString(s[:i]) + 1, Escaped: Line(s[i : i+n])}
	switch {
	case r == utf8.RuneError && n == 1:
		e.What = "a byte that is not UTF-8"
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		e.What = "a control character"
	case r == 0x2028, r == 0x2029:
		e.What = "a line separator"
	default:
		e.What = "a bidi control"
	}
	return e
}

// Len counts s in characters, the unit operators and limits use.
func Len(s string) int { return utf8.RuneCountInString(s) }

// Truncate returns s cut to at most n characters, never splitting one.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n { // n bytes hold at most n characters
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// Shorten returns s cut to at most n characters for display: when it is
// cut, its last character is "…", so a reader sees that there is more.
func Shorten(s string, n int) string {
	if Len(s) <= n {
		return s
	}
	if n <= 1 {
		return Truncate("…", n)
	}
	return Truncate(s, n-1) + "…"
}

// UnsafeRune reports whether the character r is one [Line] escapes even in
// multi-line text (everything but tab and newline of the unsafe set). It is
// for encoders that have their own escape syntax (JSON's \u202e).
func UnsafeRune(r rune) bool {
	if r < utf8.RuneSelf {
		return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f
	}
	return unsafeRune(r, utf8.RuneLen(r))
}

// MaxQuoted is how many characters of an untrusted value a message quotes
// (see [Quote]).
const MaxQuoted = 80

// Quote is the one rule for quoting an untrusted value inside a message (a
// warning, an error, a problem report): the value in double quotes, cut to
// [MaxQuoted] characters, followed when cut by how long it was — `"INC-42
// provider…" (399000 characters)` — so a value of any size costs a line, not
// a screen. The value is rendered by the [Line] rule; the exact value is
// what -o json and -o yaml print of the item itself.
func Quote(s string) string {
	n := Len(s)
	if n <= MaxQuoted {
		return `"` + Line(s) + `"`
	}
	return `"` + Line(Truncate(s, MaxQuoted)) + `…" (` + strconv.Itoa(n) + " characters)"
}

// ShellQuote quotes s as one word for a POSIX shell: in single quotes, each
// quote in s closed, escaped and reopened. A command koshactl prints for
// the operator to run (a repair) quotes every value taken from the store
// or the config with it.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
