package impact_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// audit impact says which tools a forced override changed, from when to
// when and how it ended; without a recorded rate, no count. A range with
// nothing in it says so; a range that cannot hold anything is refused.
func TestAuditImpactNamesTheToolsAnOverrideChanged(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	if out := e.MustRun(0, "audit", "impact", "--since", "1h").Stdout; !strings.Contains(out, "No tool was changed") {
		t.Errorf("an empty range: %q", out)
	}
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "INC-7", "--for", "10m")
	e.Clock.Advance(4 * time.Minute)
	e.MustRun(0, "breaker", "clear", "openai", "--reason", "back")
	e.MustRun(0, "breaker", "force-open", "postgres", "--reason", "no breaker", "--for", "10m")
	e.Clock.Advance(time.Minute)

	spans := clitest.Decode[struct {
		Spans []struct {
			Dependency string `json:"dependency"`
			Tool       string `json:"tool"`
			Behaviour  string `json:"behaviour"`
			From       string `json:"from"`
			To         string `json:"to"`
			Ended      string `json:"ended"`
			Reason     string `json:"reason"`
			Calls      *int64 `json:"calls"`
		} `json:"spans"`
	}](t, e.MustRun(0, "audit", "impact", "--since", "1h", "-o", "json").Stdout).Spans
	if len(spans) != 1 {
		t.Fatalf("spans %+v, want openai's one tool (postgres's override changes none)", spans)
	}
	s := spans[0]
	from, to := clitest.Epoch.UTC().Format(time.RFC3339), clitest.Epoch.Add(4*time.Minute).UTC().Format(time.RFC3339)
	if s.Dependency != "openai" || s.Tool != "search_knowledge_base" || s.Behaviour != "degraded" || s.Ended != "cleared" || s.Reason != "INC-7" ||
		s.Calls != nil || !strings.HasPrefix(s.From, strings.TrimSuffix(from, "Z")) || !strings.HasPrefix(s.To, strings.TrimSuffix(to, "Z")) {
		t.Errorf("span %+v, want search_knowledge_base degraded from %s until cleared at %s, without a count", s, from, to)
	}
	if out := e.MustRun(0, "audit", "impact", "--since", "1h").Stdout; !strings.Contains(out, "search_knowledge_base") || !strings.Contains(out, "4m") {
		t.Errorf("the table:\n%s", out)
	}

	for _, args := range [][]string{{"--since", "0s"}, {"--since", "1h", "--until", "2h"}, {"--since", "1h", "--until", "yesterday"}} {
		r := e.MustRun(exitcode.Usage, append([]string{"audit", "impact"}, args...)...)
		if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, args[len(args)-2]) {
			t.Errorf("audit impact %v: want one line naming %s, got %q", args, args[len(args)-2], r.Stderr)
		}
	}
}
