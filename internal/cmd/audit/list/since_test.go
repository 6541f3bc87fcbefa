package list_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestSinceReadsDays: --since 1d showed Go's `time: unknown unit "d"`. Days
// are read (1d, 7d, 2d4h) by the one parser of human durations, a bad
// value says what to write, and durations print as the dashboard does
// (2h, not 2h0m0s).
func TestSinceReadsDays(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "days", "--for", "30m")
	e.Clock.Advance(30 * time.Minute)
	for _, since := range []string{"1d", "7d", "2d4h"} {
		if r := e.MustRun(0, "audit", "list", "--since", since, "-o", "json"); !strings.Contains(r.Stdout, `"reason": "days"`) {
			t.Errorf("audit list --since %s: %s", since, r.Stdout)
		}
	}
	r := e.MustRun(0, "audit", "list", "--until", "1d")
	if !strings.Contains(r.Stdout, "No audit records match.") {
		t.Errorf("audit list --until 1d: %q", r.Stdout)
	}
	for args, want := range map[string]string{
		"--since 1x":              `"1x" is not a duration like 90m, 24h or 7d`,
		"--since -2h":             "--since -2h is negative",
		"--since 2h --until 3h":   "--until 3h is before --since 2h",
		"--follow --interval -2h": "--interval -2h: give a positive duration",
	} {
		r := e.Run(append([]string{"audit", "list"}, strings.Fields(args)...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, want) || strings.Contains(r.Stderr, "0m0s") || strings.Contains(r.Stderr, "unknown unit") {
			t.Errorf("audit list %s: exit %d, stderr %q; want exit 2 saying %q", args, r.Code, r.Stderr, want)
		}
	}
}
