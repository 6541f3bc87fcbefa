package cmdutil_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// hostile holds the values of issue 12 as they could be stored.
var hostile = map[string]string{
	"clear":               "x\x1b[2Jy",
	"title":               "\x1b]0;pwned\x07",
	"clipboard":           "\x1b]52;c;cm0gLXJmIH4=\x07",
	"cr":                  "ok\rFORGED",
	"rlo":                 "abc\u202etxt.exe",
	"isolate":             "\u2066x\u2069",
	"del":                 "a\x7fb",
	"c1":                  "a\u009b2J",
	"multiline":           "line one\nline two\u202e",
	"tab":                 "a\tb",
	"rl#evil\x1b]0;t\x07": "key too",
}

// rawUnsafe returns the first character of out a terminal would act on (tab
// and newline are layout), or -1.
func rawUnsafe(out []byte) rune {
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRune(out[i:])
		if (r == utf8.RuneError && n == 1) || textsafe.UnsafeRune(r) {
			return r
		}
		i += n
	}
	return -1
}

func TestStructuredOutputIsExactAndTerminalSafe(t *testing.T) {
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatYAML} {
		var out bytes.Buffer
		// Through the stream backstop, as commands print.
		if err := cmdutil.PrintStructured(textsafe.NewWriter(&out), format, map[string]any{"items": hostile}); err != nil {
			t.Fatal(err)
		}
		if r := rawUnsafe(out.Bytes()); r != -1 {
			t.Errorf("-o %s emits raw %U:\n%s", format, r, out.String())
		}
		var back struct {
			Items map[string]string `json:"items" yaml:"items"`
		}
		var err error
		if format == cmdutil.FormatJSON {
			err = json.Unmarshal(out.Bytes(), &back)
		} else {
			err = yaml.Unmarshal(out.Bytes(), &back)
		}
		if err != nil {
			t.Fatalf("-o %s does not decode: %v\n%s", format, err, out.String())
		}
		for k, v := range hostile {
			if back.Items[k] != v {
				t.Errorf("-o %s: %q came back as %q", format, v, back.Items[k])
			}
		}
		if len(back.Items) != len(hostile) {
			t.Errorf("-o %s: %d items came back, want %d", format, len(back.Items), len(hostile))
		}
	}
}

func TestStructuredOutputOfCleanValuesIsUnchanged(t *testing.T) {
	v := map[string]any{"b": "plain", "a": []any{"x", map[string]any{"n": 1700000000, "f": 0.5, "s": "multi\nline"}}, "é": "café"}
	var got bytes.Buffer
	if err := cmdutil.PrintStructured(&got, cmdutil.FormatYAML, v); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := yaml.NewEncoder(&want)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{"b": "plain", "a": []any{"x", map[string]any{"n": 1700000000, "f": 0.5, "s": "multi\nline"}}, "é": "café"}); err != nil {
		t.Fatal(err)
	}
	_ = enc.Close()
	if got.String() != want.String() {
		t.Errorf("YAML of clean values changed:\n%s\nwant:\n%s", got.String(), want.String())
	}
}

func TestJSONLinesAreExactAndTerminalSafe(t *testing.T) {
	var out bytes.Buffer
	if err := cmdutil.PrintJSONLine(textsafe.NewWriter(&out), hostile); err != nil {
		t.Fatal(err)
	}
	if r := rawUnsafe(out.Bytes()); r != -1 || bytes.Count(out.Bytes(), []byte("\n")) != 1 {
		t.Errorf("JSON line emits raw %U or is not one line:\n%s", r, out.String())
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	for k, v := range hostile {
		if back[k] != v {
			t.Errorf("%q came back as %q", v, back[k])
		}
	}
}
