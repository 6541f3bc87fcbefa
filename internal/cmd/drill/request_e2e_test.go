package drill_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// Issue 32: on a table whose policy needs approvals for a drill's levers,
// drill run without an approved drill request is refused before any lever
// (exit 12, one line naming drill request); drill request makes one
// (exit 12, with the approve command), and a run with it while it is
// pending is refused too. Nothing is written but the request.
func TestDrillOnFourEyesNeedsAnApprovedRequest(t *testing.T) {
	e := clitest.New(t)
	e.MustRun(0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	file := filepath.Join(t.TempDir(), "force.yaml")
	src := "name: force\ntimeout: 1m\nvars:\n  dep: openai\nsteps:\n  - id: force\n    breaker.force-open: {dependency: \"${vars.dep}\", for: 30s}\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.Run("drill", "run", file)
	if r.Code != exitcode.Pending || !strings.Contains(r.Stderr, "koshactl drill request "+file) {
		t.Fatalf("run without a request: exit %d, want 12 naming drill request\nstdout:%s\nstderr:%s", r.Code, r.Stdout, r.Stderr)
	}
	r = e.Run("drill", "request", file, "--reason", "game day")
	m := regexp.MustCompile(`koshactl request approve ([0-9a-f]{12})`).FindStringSubmatch(r.Stdout)
	if r.Code != exitcode.Pending || m == nil || !strings.Contains(r.Stdout, "breaker.force-open openai") {
		t.Fatalf("drill request: exit %d, want 12 with the approve command and the lever\nstdout:%s\nstderr:%s", r.Code, r.Stdout, r.Stderr)
	}
	show := e.MustRun(0, "request", "show", m[1], "-o", "json").Stdout
	if !strings.Contains(show, `"drill.run"`) || !strings.Contains(show, `"pending"`) {
		t.Errorf("request show: want a pending drill.run request:\n%s", show)
	}
	r = e.Run("drill", "run", file, "--request", m[1])
	if r.Code != exitcode.Pending || !strings.Contains(r.Stderr, "still waits") {
		t.Fatalf("run with a pending request: exit %d, want 12\nstdout:%s\nstderr:%s", r.Code, r.Stdout, r.Stderr)
	}
	if recs := e.MustRun(0, "audit", "list", "-o", "json").Stdout; strings.Contains(recs, `"breaker.force-open"`) {
		t.Errorf("a refused drill forced a breaker:\n%s", recs)
	}
}
