package freeze_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	breakerstatus "github.com/kosha-platform/koshactl/internal/cmd/breaker/status"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/lift"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/set"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/status"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

func newCLI(t *testing.T) *clitest.Env {
	t.Helper()
	e := clitest.New(t, clitest.Parallel())
	e.WriteConfig("current-context: local\ncontexts:\n  local:\n    store:\n      local: {}\n    max-override: 2h\n")
	return e
}

// The freeze's life through the CLI: set (named in freeze status and
// breaker status), a second set extending it, a lift, a lift of nothing
// (exit 0, saying so), and a sign minted after the lift.
func TestFreezeStatusAndLiftThroughTheCLI(t *testing.T) {
	t.Parallel()
	e := newCLI(t)
	r := e.MustRun(0, "freeze", "--reason", "payments failing", "--ref", "INC-1", "-o", "json")
	res := clitest.Decode[set.Result](t, r.Stdout)
	if res.Action != "frozen" || res.Freeze.State != freeze.StateFrozen || res.Freeze.Ref != "INC-1" || res.AuditID == "" ||
		!res.Freeze.ExpiresAt.Equal(clitest.Epoch.Add(time.Hour)) {
		t.Fatalf("freeze result %+v: want frozen for the default hour, INC-1, audited", res)
	}
	st := clitest.Decode[status.Result](t, e.MustRun(0, "freeze", "status", "-o", "json").Stdout)
	if !st.Frozen || st.Freeze == nil || st.Freeze.Reason != "payments failing" {
		t.Fatalf("freeze status %+v", st)
	}
	// breaker status shows it too (its gauges, absent here, exit 5: what
	// could be read is printed).
	bs := clitest.Decode[breakerstatus.Result](t, e.Run("breaker", "status", "-o", "json").Stdout)
	if bs.Freeze == nil || bs.Freeze.State != freeze.StateFrozen || bs.Freeze.Ref != "INC-1" {
		t.Errorf("breaker status shows the freeze as %+v", bs.Freeze)
	}
	if out := e.MustRun(0, "freeze", "status").Stdout; !strings.Contains(out, "frozen by") || !strings.Contains(out, "(INC-1)") {
		t.Errorf("freeze status:\n%s", out)
	}

	// A second freeze, shorter: it extends, keeping the later end.
	e.Clock.Advance(time.Minute)
	r = e.MustRun(0, "freeze", "--reason", "second look", "--ref", "INC-2", "--for", "10m")
	if !strings.Contains(r.Stdout, "extending the freeze held") || !strings.Contains(r.Stdout, "its end is kept") {
		t.Errorf("second freeze:\n%s", r.Stdout)
	}

	l := clitest.Decode[lift.Result](t, e.MustRun(0, "freeze", "lift", "--reason", "not us", "-o", "json").Stdout)
	if l.Action != "lifted" || l.Freeze == nil || l.Freeze.State != freeze.StateLifted || l.Freeze.LiftReason != "not us" {
		t.Fatalf("lift %+v", l)
	}
	again := e.MustRun(0, "freeze", "lift", "--reason", "again")
	if !strings.Contains(again.Stdout, "not frozen") || !strings.Contains(again.Stdout, "nothing to lift") {
		t.Errorf("a second lift:\n%s", again.Stdout)
	}
	recs := e.MustRun(0, "audit", "list", "--subject", freeze.Key, "-o", "json").Stdout
	if n := strings.Count(recs, `"action": "freeze.set"`) + strings.Count(recs, `"action":"freeze.set"`); n != 2 {
		t.Errorf("%d freeze.set records, want 2:\n%s", n, recs)
	}
}

// Bad input is a usage error naming the fix, with nothing written.
func TestFreezeBadInput(t *testing.T) {
	t.Parallel()
	e := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"freeze"}, "--reason"},
		{[]string{"freeze", "--reason", "x", "--for", "3h"}, "max-override (2h)"},
		{[]string{"freeze", "--reason", "x", "--for", "1s"}, "freeze for longer"},
		{[]string{"freeze", "--reason", "x", "--until", "tomorrow"}, "RFC3339"},
		{[]string{"freeze", "--reason", "x", "--ref", "INC 1"}, "--ref"},
		{[]string{"freeze", "--reason", "x", "--timeout", "5s"}, "--wait"},
		{[]string{"freeze", "lift"}, "--reason"},
	} {
		r := e.MustRun(exitcode.Usage, tc.args...)
		if !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("koshactl %s: %q lacks %q", strings.Join(tc.args, " "), r.Stderr, tc.want)
		}
	}
	if st := clitest.Decode[status.Result](t, e.MustRun(0, "freeze", "status", "-o", "json").Stdout); st.Freeze != nil {
		t.Errorf("something was written: %+v", st.Freeze)
	}
	// A dry run writes nothing either.
	e.MustRun(0, "freeze", "--reason", "x", "--dry-run")
	if st := clitest.Decode[status.Result](t, e.MustRun(0, "freeze", "status", "-o", "json").Stdout); st.Freeze != nil {
		t.Errorf("a dry run wrote: %+v", st.Freeze)
	}
}

// The store unreachable: exit 5, one line, nothing claimed.
func TestFreezeWithTheStoreUnreachable(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "config", "set-context", "down", "--table", "t", "--region", "us-east-1",
		"--endpoint-url", "http://127.0.0.1:1", "--static-credentials", "--use")
	for _, args := range [][]string{{"freeze", "--reason", "x"}, {"freeze", "lift", "--reason", "x"}, {"freeze", "status"}} {
		r := e.MustRun(exitcode.Unavailable, args...)
		if r.Stdout != "" || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("koshactl %s: stdout %q, stderr %q: want nothing claimed, one error line", strings.Join(args, " "), r.Stdout, r.Stderr)
		}
	}
}

// The control plane obeys while frozen, through the CLI: drill run is
// refused (exit 7, the freeze named, no lever pulled), the incident levers
// are not; after the lift the drill runs.
func TestWhileFrozenDrillRunIsRefusedAndIncidentLeversAreNot(t *testing.T) {
	t.Parallel()
	e := newCLI(t)
	file := filepath.Join(t.TempDir(), "drill.yaml")
	if err := os.WriteFile(file, []byte("name: d\ntimeout: 1m\nsteps:\n  - breaker.force-open: {dependency: openai, for: 5m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.MustRun(0, "freeze", "--reason", "payments failing", "--ref", "INC-1")

	r := e.MustRun(exitcode.Refused, "drill", "run", file)
	if !strings.Contains(r.Stderr, "frozen by") || !strings.Contains(r.Stderr, "(INC-1)") || !strings.Contains(r.Stderr, "no drill starts") {
		t.Errorf("drill run while frozen: stderr does not name the freeze:\n%s", r.Stderr)
	}
	if recs := e.MustRun(0, "audit", "list", "--subject", "breaker#openai", "-o", "json").Stdout; strings.Contains(recs, "breaker.force-open") {
		t.Errorf("a refused drill pulled a lever:\n%s", recs)
	}

	// The people handling the incident are not held.
	e.MustRun(0, "breaker", "force-open", "core-api", "--reason", "incident", "--for", "10m")
	e.MustRun(0, "breaker", "clear", "core-api", "--reason", "incident over")
	e.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "incident")

	e.MustRun(0, "freeze", "lift", "--reason", "not us")
	e.MustRun(0, "drill", "run", file)
}
