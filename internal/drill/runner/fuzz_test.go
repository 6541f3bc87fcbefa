package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
)

// FuzzParse checks the parser's promises on any input: it never panics or
// hangs, every problem is positioned inside the file with a one-line
// message, problems come sorted, parsing is deterministic, and a file
// without problems is a usable drill. The seed corpus (testdata/fuzz) holds
// the example drills and malformed variants of them.
//
// Inputs longer than maxParseFuzz (twice the largest example drill) are
// passed over: a parse costs about a third of a millisecond per 3 KB, and
// the fuzzing engine minimizes each new interesting input by trying
// removals quadratic in its length, so one grown input kept both workers at
// 0 execs/s for the rest of a 20 s run (issue 45). `make fuzz` also bounds
// each minimization (FUZZMINIMIZE). Large files are the parser's tests'
// (the size and node limits), not the fuzzer's.
func FuzzParse(f *testing.F) {
	examples, _ := filepath.Glob(filepath.Join("..", "..", "..", "docs", "drills", "*.yaml"))
	for _, p := range examples {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	reg := kinds.Builtin()
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > maxParseFuzz {
			return
		}
		d, probs := drill.Parse(reg, "f.yaml", src)
		lines := yamlLines(src) + 2
		for _, p := range probs {
			if p.File != "f.yaml" || p.Line < 1 || p.Col < 1 || p.Line > lines || p.Message == "" || strings.ContainsAny(p.Message, "\n\r") {
				t.Fatalf("bad problem %#v (file has %d lines)", p, lines)
			}
		}
		if !slices.IsSortedFunc(probs, func(a, b drill.Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		}) {
			t.Fatalf("problems not sorted: %v", probs)
		}
		d2, probs2 := drill.Parse(reg, "f.yaml", src)
		if !reflect.DeepEqual(probs, probs2) || (d == nil) != (d2 == nil) {
			t.Fatalf("parse is not deterministic:\n%v\n%v", probs, probs2)
		}
		if len(probs) == 0 {
			if d == nil || d.Name == "" || d.Timeout <= 0 || len(d.Steps) == 0 || d.StepTimeout <= 0 || d.StepTimeout > d.Timeout {
				t.Fatalf("no problems, but the drill is unusable: %+v", d)
			}
			seen := map[string]bool{}
			for _, s := range d.Steps {
				if s.Spec == nil || s.Kind == nil || seen[s.ID] || !drill.ValidStepID(s.ID) {
					t.Fatalf("step %+v", s)
				}
				seen[s.ID] = true
			}
		}
	})
}

// maxParseFuzz is the longest input FuzzParse checks.
const maxParseFuzz = 8 << 10

// yamlLines counts line breaks as YAML does: CRLF, CR, LF, NEL, LS and PS.
func yamlLines(src []byte) int {
	s := strings.ReplaceAll(string(src), "\r\n", "\n")
	n := 0
	for _, r := range s {
		switch r {
		case '\n', '\r', '\u0085', '\u2028', '\u2029':
			n++
		}
	}
	return n
}
