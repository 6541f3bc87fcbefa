package breaker_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestTyposGetTheNearName: a mistyped dependency or chaos target is
// answered with the name it is near, never acted on as a guess. breaker
// get opneai said its breakers "follow their own state"; clear OpenAI and
// chaos sign --target screnning-sim named no suggestion.
func TestTyposGetTheNearName(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"breaker", "get", "opneai"}, 3, `unknown dependency "opneai": this context knows`},
		{[]string{"breaker", "get", "opneai"}, 3, `(did you mean "openai"?)`},
		{[]string{"breaker", "get", "OpenAI"}, 2, `(did you mean "openai"?)`},
		{[]string{"breaker", "clear", "OpenAI", "--reason", "typo"}, 2, `(did you mean "openai"?)`},
		{[]string{"breaker", "clear", "core_api", "--reason", "typo"}, 2, `(did you mean "core-api"?)`},
		{[]string{"chaos", "sign", "--target", "screnning-sim", "--fault", "error"}, 2, "(did you mean screening-sim?)"},
		{[]string{"chaos", "sign", "--target", "Screening_Sim", "--fault", "error"}, 2, "(did you mean screening-sim?)"},
	} {
		r := e.Run(tc.args...)
		if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) || r.Stdout != "" {
			t.Errorf("koshactl %v: exit %d, stdout %q, stderr %q; want exit %d saying %q", tc.args, r.Code, r.Stdout, r.Stderr, tc.code, tc.want)
		}
	}
	// A known dependency without an override still says so, as before.
	if r := e.Run("breaker", "get", "openai"); r.Code != 3 || !strings.Contains(r.Stderr, "its breakers follow their own state") {
		t.Errorf("breaker get openai: exit %d, %q", r.Code, r.Stderr)
	}
}
