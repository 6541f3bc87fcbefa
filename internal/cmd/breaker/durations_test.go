package breaker_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestDurationsPrintAsTheDashboard: errors printed Go's 48h0m0s beside the
// dashboard's 24h. Every duration a command prints reads by internal/human.
func TestDurationsPrintAsTheDashboard(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for args, want := range map[string]string{
		"breaker force-open openai --reason x --for 48h":    "--for 2d is over this context's max-override of 24h",
		"breaker force-open openai --reason x --for 0s":     "--for 0s is not positive",
		"ratelimit drain agent-1 --create --for 2h":         "--for 2h: give a duration from 0 (just empty it) to 1h",
		"chaos sign --target openai --fault error --ttl 2h": "--ttl 2h: chaos header ttl out of range: it exceeds the 15m cap",
		"breaker status --watch --interval 500ms":           "--interval 500ms is too short",
	} {
		r := e.Run(strings.Fields(args)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, want) || strings.Contains(r.Stderr, "0m0s") {
			t.Errorf("koshactl %s: exit %d, stderr %q; want exit 2 saying %q", args, r.Code, r.Stderr, want)
		}
	}
}
