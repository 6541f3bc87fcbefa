package textsafe

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// The hostile values of issue 12, and what each must look like.
var cases = []struct {
	name, in, line, text string
}{
	{"clean", "provider incident INC-142", "provider incident INC-142", "provider incident INC-142"},
	{"accents and emoji", "café 🔥 日本語 – ok", "café 🔥 日本語 – ok", "café 🔥 日本語 – ok"},
	{"clear screen", "x\x1b[2Jy", `x\x1b[2Jy`, `x\x1b[2Jy`},
	{"retitle", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
	{"clipboard", "\x1b]52;c;cm0gLXJmIH4=\x07", `\x1b]52;c;cm0gLXJmIH4=\x07`, `\x1b]52;c;cm0gLXJmIH4=\x07`},
	{"carriage return", "ok\rFORGED", `ok\rFORGED`, `ok\rFORGED`},
	{"newline and tab", "a\tb\nc", `a\tb\nc`, "a\tb\nc"},
	{"right-to-left override", "abc\u202etxt.exe", `abc\u202etxt.exe`, `abc\u202etxt.exe`},
	{"isolates", "\u2066x\u2069", `\u2066x\u2069`, `\u2066x\u2069`},
	{"marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, `\u200e\u200f\u061c`},
	{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
	{"DEL and NUL", "a\x7fb\x00", `a\x7fb\x00`, `a\x7fb\x00`},
	{"C1 CSI", "a\u009b2J", `a\u009b2J`, `a\u009b2J`},
	{"not UTF-8", "a\xffb\xe2\x80", `a\xffb\xe2\x80`, `a\xffb\xe2\x80`},
	{"replacement character is text", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
	{"zero width joiner is text", "👩\u200d💻", "👩\u200d💻", "👩\u200d💻"},
	{"backslash is not doubled", `C:\x1b`, `C:\x1b`, `C:\x1b`},
}

func TestLineAndText(t *testing.T) {
	for _, c := range cases {
		if got := Line(c.in); got != c.line {
			t.Errorf("%s: Line(%q) = %q, want %q", c.name, c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.text)
		}
		if IsSafe(c.in) != (c.line == c.in) {
			t.Errorf("%s: IsSafe(%q) = %v", c.name, c.in, IsSafe(c.in))
		}
	}
}

func TestCheckNamesCharacterAndPosition(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ok", ""},
		{"éé\x1b[2J", `a control character (\x1b) at character 3`},
		{"abc\u202etxt", `a bidi control (\u202e) at character 4`},
		{"\xffx", `a byte that is not UTF-8 (\xff) at character 1`},
		{"a\nb", `a control character (\n) at character 2`},
		{"a\u2029", `a line separator (\u2029) at character 2`},
		{"\u0085", `a control character (\u0085) at character 1`},
	} {
		err := Check(c.in)
		if c.want == "" {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", c.in, err)
			}
			continue
		}
		var ce *CharError
		if !errors.As(err, &ce) || err.Error() != c.want {
			t.Errorf("Check(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestTruncateNeverSplitsACharacter(t *testing.T) {
	e := strings.Repeat("é", 400) // 800 bytes, 400 characters
	if got := Truncate(e, 500); got != e {
		t.Errorf("400 characters cut to 500 changed: %d characters", Len(got))
	}
	if got := Truncate(e, 7); got != strings.Repeat("é", 7) {
		t.Errorf("Truncate(é×400, 7) = %q", got)
	}
	if got := Truncate("ab🔥cd", 3); got != "ab🔥" {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("abc", 0); got != "" {
		t.Errorf("Truncate(0) = %q", got)
	}
	for n := 0; n < 12; n++ {
		if got := Truncate("a日本🔥é\xffz", n); !utf8.ValidString(strings.ReplaceAll(got, "\xff", "")) || Len(got) > n {
			t.Errorf("Truncate(%d) = %q", n, got)
		}
	}
}

func TestWriterEscapesAcrossSplitWrites(t *testing.T) {
	in := "row\tone\nabc\u202e日\x1b]0;t\x07\r\xff🔥end\n"
	want := Text(in)
	for cut := 0; cut <= len(in); cut++ {
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, part := range []string{in[:cut], in[cut:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("cut %d: Write = %d, %v", cut, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("cut %d: %q, want %q", cut, out.String(), want)
		}
	}
	// One byte at a time.
	var out bytes.Buffer
	w := NewWriter(&out)
	for i := 0; i < len(in); i++ {
		_, _ = w.Write([]byte{in[i]})
	}
	_ = w.Flush()
	if out.String() != want {
		t.Errorf("bytewise: %q, want %q", out.String(), want)
	}
	// An incomplete character at the end is escaped on Flush.
	out.Reset()
	w = NewWriter(&out)
	_, _ = w.Write([]byte("x\xe2\x80"))
	if out.String() != "x" {
		t.Errorf("held bytes written early: %q", out.String())
	}
	_ = w.Flush()
	if out.String() != `x\xe2\x80` {
		t.Errorf("flushed: %q", out.String())
	}
	if Raw(w) != &out || Raw(&out) != &out {
		t.Error("Raw does not unwrap")
	}
}

func TestCleanPathDoesNotAllocate(t *testing.T) {
	s := "openai  forced_open  in 27m  alice@example.com  provider incident INC-142 café"
	var sink bytes.Buffer
	sink.Grow(1 << 16)
	w := NewWriter(&sink)
	p := []byte(s + "\n")
	allocs := testing.AllocsPerRun(100, func() {
		_ = Line(s)
		_ = Text(s)
		_ = Check(s)
		_, _ = w.Write(p)
	})
	if allocs != 0 {
		t.Errorf("clean text: %v allocations per run, want 0", allocs)
	}
}

// assertNoRawControl fails when out holds a byte or character the package
// promises never to emit (keepLines allows newline and tab).
func assertNoRawControl(t *testing.T, out string, keepLines bool) {
	t.Helper()
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		bad := false
		switch {
		case r == utf8.RuneError && n == 1:
			bad = true
		case r == '\n' || r == '\t':
			bad = !keepLines
		case r < 0x20, r >= 0x7f && r <= 0x9f, r == 0x061c, r == 0x200e, r == 0x200f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029:
			bad = true
		}
		if bad {
			t.Fatalf("raw %U at byte %d in %q", r, i, out)
		}
		i += n
	}
}

// FuzzRender: any stored string, rendered, holds no raw control byte, bidi
// control or invalid UTF-8; clean strings are unchanged; Check agrees with
// Line; the stream writer renders like Text wherever the writes are cut.
//
// Inputs longer than maxRenderFuzz are passed over: the rule is per
// character (a character and the bytes around a cut are all it reads), so
// a longer string reaches no state a shorter one does not, and the fuzzing
// engine's minimization of an interesting input, quadratic in its length,
// kept the workers at 0 execs/s for the rest of a 20 s run on strings the
// mutator had grown to kilobytes (issue 45).
func FuzzRender(f *testing.F) {
	for _, c := range cases {
		f.Add(c.in, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint8) {
		if len(s) > maxRenderFuzz {
			return
		}
		line, text := Line(s), Text(s)
		assertNoRawControl(t, line, false)
		assertNoRawControl(t, text, true)
		if (Check(s) == nil) != (line == s) {
			t.Fatalf("Check(%q) = %v but Line changed it to %q", s, Check(s), line)
		}
		if Line(line) != line || Text(text) != text {
			t.Fatalf("rendering is not stable: %q, %q", line, text)
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		k := int(cut) % (len(s) + 1)
		_, _ = w.Write([]byte(s[:k]))
		_, _ = w.Write([]byte(s[k:]))
		_ = w.Flush()
		if out.String() != text {
			t.Fatalf("Writer(%q cut at %d) = %q, want %q", s, k, out.String(), text)
		}
	})
}

// maxRenderFuzz is the longest input FuzzRender checks.
const maxRenderFuzz = 512

func TestQuoteIsBounded(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"tomorrow", `"tomorrow"`},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`},
		{strings.Repeat("é", MaxQuoted), `"` + strings.Repeat("é", MaxQuoted) + `"`},
		{strings.Repeat("é", MaxQuoted+1), `"` + strings.Repeat("é", MaxQuoted) + `…" (81 characters)`},
		{"\x1b" + strings.Repeat("x", 399_000), `"\x1b` + strings.Repeat("x", MaxQuoted-1) + `…" (399001 characters)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShortenSaysItCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"openai-closed", 20, "openai-closed"},
		{"openai-closed", 13, "openai-closed"},
		{"openai-closed", 8, "openai-…"},
		{"éééé", 3, "éé…"},
		{"abc", 1, "…"},
		{"abc", 0, ""},
	} {
		if got := Shorten(c.in, c.n); got != c.want || Len(got) > max(c.n, 0) {
			t.Errorf("Shorten(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// An error wrapped over lines reads as one line; the controls a plain
// whitespace fold (strings.Fields) would have turned into a space without
// a trace are shown instead.
func TestOneLineFoldsLinesAndShowsControls(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"read override: AccessDenied", "read override: AccessDenied"},
		{"  gauges:\n\tcore-api  timed out \n", "gauges: core-api timed out"},
		{"yaml: unmarshal errors:\n  line 3: unknown field", "yaml: unmarshal errors: line 3: unknown field"},
		{"ok\rFORGED", `ok\rFORGED`},
		{"body: <html>\x1b[2J</html>", `body: <html>\x1b[2J</html>`},
		{"a\u2028b\u0085c\vd\fe", `a\u2028b\u0085c\x0bd\x0ce`},
		{"abc\u202etxt.exe", `abc\u202etxt.exe`},
		{"\n\t \n", ""},
	} {
		if got := OneLine(c.in); got != c.want {
			t.Errorf("OneLine(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := OneLine(OneLine(c.in)); got != c.want {
			t.Errorf("OneLine twice on %q = %q, want %q as once", c.in, got, c.want)
		}
	}
}
