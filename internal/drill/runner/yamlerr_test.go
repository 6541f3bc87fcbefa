package runner

import (
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"testing"
)

// yaml.v3 prints a parser error's line 0-based and a scanner error's
// 1-based, as text only (see yamlParserProblems): these pin both, so a
// library upgrade that changes the wording or the numbering fails here.
func TestYAMLSyntaxProblemsPointAtTheirLine(t *testing.T) {
	for src, want := range map[string]string{
		"name: x\ntimeout: 1m\nsteps:\n  - a: 1\n b: 2\n": "t.yaml:5:1: YAML syntax: did not find expected key",                   // parser
		"name: x\ntimeout: 1m\nsteps:\n\t- a: 1\n":        "t.yaml:4:1: YAML syntax: found character that cannot start any token", // scanner
	} {
		_, probs := drill.Parse(kinds.Builtin(), "t.yaml", []byte(src))
		if len(probs) != 1 || probs[0].String() != want {
			t.Errorf("%q: %v, want %s", src, probs, want)
		}
	}
}
