package apply_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmd/levers/apply"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// drive runs koshactl in the background, moving the fake clock 5 s (a
// bake's poll on a scrape) each time the command waits on it; during runs
// before each step.
func drive(t *testing.T, e *clitest.Env, during func(step int), args ...string) clitest.Result {
	t.Helper()
	done := make(chan clitest.Result, 1)
	go func() { done <- e.Run(args...) }()
	for step := 1; ; step++ {
		var r clitest.Result
		ended := false
		wait.Until(t, "koshactl to wait on the clock or end", func() bool {
			select {
			case r = <-done:
				ended = true
				return true
			default:
				return e.Clock.Waiters() > 0
			}
		})
		if ended {
			return r
		}
		if during != nil {
			during(step)
		}
		e.Clock.Advance(5 * time.Second)
	}
}

// apply --bake bakes the clears of a round: a window removed from the file
// while its override still had time left is cleared; its breakers re-open
// on both instances, so the override is put back as it was (exit 15). The
// put-back is not the file's (no marker): the next apply leaves it alone.
func TestApplyBakePutsBackAWindowsClearThatDidNotHold(t *testing.T) {
	t.Parallel()
	e, fl, path := newEnv(t)
	window(t, path, "RDS minor upgrade (CHG-1042)", clitest.Epoch.Add(-time.Minute), 30*time.Minute)
	fl.set(gauges(map[string]int{"postgres": 3}))
	e.MustRun(0, "apply", "-f", path)
	pg, ok := get(t, e, "postgres")
	if !ok {
		t.Fatal("the window was not applied")
	}
	if err := os.WriteFile(path, []byte("version: 1\ncontext: local\nname: maintenance\nwindows: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(time.Second)
	fl.set(gauges(map[string]int{"postgres": 0}))
	r := drive(t, e, func(step int) {
		if step == 3 {
			fl.set(gauges(map[string]int{"postgres": 2}))
		}
	}, "apply", "-f", path, "--bake", "5m", "-o", "json")
	if r.Code != exitcode.RolledBack {
		t.Fatalf("exit %d, want 15\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	res := clitest.Decode[apply.Result](t, r.Stdout)
	if len(res.Results) != 1 || res.Results[0].Action != "cleared" || res.Bake == nil || res.Bake.Verdict.String() != "reopened" ||
		len(res.Bake.PutBack) != 1 || res.Bake.PutBack[0].Action != "put-back" || res.Bake.PutBack[0].RollbackOf != res.Results[0].AuditID {
		t.Fatalf("apply --bake: %+v bake %+v", res.Results, res.Bake)
	}
	back, ok := get(t, e, "postgres")
	if !ok || !back.Active || back.Reason != pg.Reason || *back.ExpiresAt != *pg.ExpiresAt || back.ManagedBy != "" {
		t.Fatalf("put back %+v, want %+v's reason and expiry, no file marker", back, pg)
	}
	if r := e.MustRun(0, "apply", "-f", path); !strings.Contains(r.Stdout, "Nothing to apply") {
		t.Errorf("the next apply touched the put-back override:\n%s", r.Stdout)
	}
}

func TestApplyBakeRefusals(t *testing.T) {
	t.Parallel()
	e, _, path := newEnv(t)
	window(t, path, "RDS minor upgrade (CHG-1042)", clitest.Epoch.Add(time.Hour), 30*time.Minute)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bake", "5m", "--watch"}, "--bake watches the fleet once"},
		{[]string{"--bake", "5m", "--dry-run"}, "--bake has nothing to watch with --dry-run"},
		{[]string{"--metrics-url", "http://127.0.0.1:1/metrics"}, "--metrics-url only applies with --bake"},
		{[]string{"--bake", "48h"}, "longer than this context's max-override"},
	} {
		r := e.Run(append([]string{"apply", "-f", path}, tc.args...)...)
		if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q\n%s", tc.args, r.Code, tc.want, r.Stderr)
		}
	}
}
