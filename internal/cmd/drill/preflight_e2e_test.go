package drill_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// Issue 21: drill run with nothing serving its metrics source waited out
// its hypothesis (60 s) and exited 1. The preflight refuses at once, names
// the source that does not answer with the hint breaker status gives, and
// exits 5; nothing is written.
func TestDrillRunWithNothingServingItsMetricsExits5(t *testing.T) {
	e := clitest.New(t)
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	_ = l.Close() // nothing serves there now
	t.Setenv("SANDBOX_URL", gone)
	jpath := filepath.Join(t.TempDir(), "journal.json")
	r := e.Run("drill", "run", filepath.Join(drillsDir, "openai-outage.yaml"), "--journal", jpath)
	if r.Code != exitcode.Unavailable {
		t.Fatalf("exit %d, want 5\nstdout:%s\nstderr:%s", r.Code, r.Stdout, r.Stderr)
	}
	var errLine string
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(l, "error: ") {
			errLine = l
		}
	}
	for _, want := range []string{"refused before any lever was pulled", "prometheus " + gone + "/metrics", "connection refused", "is the sandbox running?"} {
		if !strings.Contains(errLine, want) {
			t.Errorf("error line lacks %q: %s", want, errLine)
		}
	}
	j := readJournal(t, jpath)
	if j.Outcome != drill.OutcomeRefused || len(j.Rollbacks) != 0 || len(j.Hypothesis.Before) != 0 || j.DurationSeconds != 0 {
		t.Errorf("journal: outcome %s, %d rollbacks, hypothesis %+v, %gs on the clock", j.Outcome, len(j.Rollbacks), j.Hypothesis.Before, j.DurationSeconds)
	}
	if recs := e.MustRun(0, "audit", "list", "-o", "json").Stdout; strings.Contains(recs, `"action"`) {
		t.Errorf("a refused drill wrote audit records:\n%s", recs)
	}
}
