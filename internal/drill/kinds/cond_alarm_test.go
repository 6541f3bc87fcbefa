package kinds

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
)

func TestAlarmConditionParseProblems(t *testing.T) {
	for src, want := range map[string]string{
		"alarm: {}":                        "give name",
		"alarm: {name: a, state: red}":     `"red": use ALARM`,
		"alarm: {name: a, region: Europe}": "is not an AWS region",
		"alarm: {name: a, dimension: x}":   `unknown field "dimension"`,
		"alarm: {name: ['']}":              "1-255 characters",
	} {
		_, probs := drill.Parse(Builtin(), "t.yaml", []byte("name: p\ntimeout: 1m\nstop_conditions:\n  - "+src+"\nsteps:\n  - shell: \"true\"\n"))
		if len(probs) == 0 || !strings.Contains(probs[0].Message, want) {
			t.Errorf("%s: problems %v, want %q", src, probs, want)
		}
	}
}
