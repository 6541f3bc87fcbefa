package root

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type linesErr []string

func (e linesErr) Error() string        { return strings.Join(e, "\n") }
func (e linesErr) ErrorLines() []string { return e }

// An error of several lines (a file's problems) prints one a line, what
// wraps it on the first; any other error, however wrapped, is one line.
// Each line is rendered: a control in a stored value is shown, not sent.
func TestErrorLines(t *testing.T) {
	problems := linesErr{"f.yaml:5: unknown dependency", "f.yaml:7: no time zone"}
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{problems, []string{"f.yaml:5: unknown dependency", "f.yaml:7: no time zone"}},
		{fmt.Errorf("context dev: %w", problems), []string{"context dev: f.yaml:5: unknown dependency", "f.yaml:7: no time zone"}},
		{fmt.Errorf("%w (and more)", problems), []string{"f.yaml:5: unknown dependency f.yaml:7: no time zone (and more)"}},
		{linesErr{"only one"}, []string{"only one"}},
		{errors.New("a wrapped\nmessage"), []string{"a wrapped message"}},
		{errors.New("reason \"ok\rFORGED\x1b[2J\""), []string{`reason "ok\rFORGED\x1b[2J"`}},
		{linesErr{"f.yaml:5: \u202eexe.txt", "f.yaml:7: ok"}, []string{`f.yaml:5: \u202eexe.txt`, "f.yaml:7: ok"}},
	} {
		if got := errorLines(tc.err); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("errorLines(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
