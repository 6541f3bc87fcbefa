package drill_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestMissingFilesSayWhichInOneLine: drill run of a missing file printed
// "FILE:1:1: read drill: no such file or directory" (no error:, a position
// the file does not have), and drill report of a missing journal did not
// name it. Each is one error line naming the file and the cause.
func TestMissingFilesSayWhichInOneLine(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"drill", "run", "docs/drills/nope.yaml"}, "error: docs/drills/nope.yaml: cannot read the drill file: no such file or directory; nothing was run\n"},
		{[]string{"drill", "plan", "nope.yaml"}, "error: nope.yaml: cannot read the drill file: no such file or directory\n"},
		{[]string{"drill", "report", "nope.json"}, "error: read journal nope.json: no such file or directory; nothing was written\n"},
		{[]string{"drill", "validate", "nope.yaml"}, "nope.yaml: cannot read the drill file: no such file or directory\n1 problem found\n"},
	} {
		r := e.Run(tc.args...)
		if r.Code != 2 || r.Stderr != tc.want || strings.Contains(r.Stderr, ":1:1:") {
			t.Errorf("koshactl %v: exit %d, stderr %q; want exit 2 and %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}
