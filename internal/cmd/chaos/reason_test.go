package chaos_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// chaos sign applies the one reason rule: a bidi control is refused by name
// and position, and length counts characters.
func TestSignReasonFollowsTheOneReasonRule(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig("contexts:\n  local:\n    store:\n      local: {}\n    chaos:\n      targets: [core-api]\n")
	for _, tc := range []struct{ reason, want string }{
		{"drill\u202eevil", `--reason has a bidi control (\u202e) at character 6`},
		{"x\x1b]52;c;cHduZWQ=\x07", `--reason has a control character (\x1b) at character 2`},
		{strings.Repeat("é", 501), "--reason is 501 characters"},
	} {
		r := c.run("chaos", "sign", "--target", "core-api", "--fault", "error", "--reason", tc.reason)
		if r.Code != exitcode.Usage {
			t.Errorf("%q: exit %d, want 2\n%s", tc.reason, r.Code, r.Stderr)
		}
		termtest.AssertSafe(t, "stderr", r.Stderr)
		oneErrorLine(t, r, tc.want)
	}
	c.must(0, "chaos", "sign", "--target", "core-api", "--fault", "error", "--reason", strings.Repeat("é", 400))
}
