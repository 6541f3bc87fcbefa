package drill_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/recovery"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
)

func runRecover(t *testing.T, journal string, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.NewWith(ios, clock.Real{})
	opts := &recovery.Options{Journal: journal, Output: cmdutil.FormatTable}
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "--junit" {
			opts.JUnit = args[i+1]
		}
	}
	err := recovery.Run(context.Background(), f, opts)
	if err != nil && !errors.Is(err, cmdutil.ErrSilent) {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return exitcode.Of(err), out.String(), errOut.String()
}

// The recover test: a real drill process is SIGKILLed once every
// lever is pulled; drill recover refuses while it lives, then finishes its
// rollbacks (the override and the drain gone long before their expiry),
// records the recovery in the journal, JUnit and audit log, and a second
// recover does nothing.
func TestKilledDrillIsRecovered(t *testing.T) {
	bin := koshactlBinary(t)
	s := onSandbox(t)
	dir := t.TempDir()
	jpath := filepath.Join(dir, "journal.json")
	cmd := exec.CommandContext(t.Context(), bin, "drill", "run", filepath.Join(drillsDir, "interrupted.yaml"), "--journal", jpath) //nolint:gosec // G204: the binary this test built
	cmd.Env = os.Environ()
	var log syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// "Lever pulled": the run sits in its half-way sleep with the override,
	// the drain and the header in place.
	waitForRunningStep(t, cmd, exited, jpath, "halfway", &log)
	ctx := context.Background()
	ov := breaker.NewOverrides(s.store, nil)
	if _, err := ov.Get(ctx, "openai"); err != nil {
		t.Fatalf("openai is not forced at the half-way point: %v", err)
	}

	// Alive: recover refuses and changes nothing.
	host, _ := os.Hostname()
	live := fmt.Sprintf("a run is still going: pid %d started at ", cmd.Process.Pid)
	if code, _, errOut := runRecover(t, jpath); code != exitcode.Conflict || !strings.Contains(errOut, live) || !strings.Contains(errOut, " on host "+host) {
		t.Fatalf("recover while the run lives: exit %d, %s", code, errOut)
	}
	if _, err := ov.Get(ctx, "openai"); err != nil {
		t.Fatalf("recover while alive touched the override: %v", err)
	}

	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil {
		t.Fatal("the killed drill exited 0")
	}
	before := readJournal(t, jpath)
	if before.Outcome != drill.OutcomeRunning || before.Runner == nil || before.Runner.PID != cmd.Process.Pid {
		t.Fatalf("killed journal: outcome %s runner %+v", before.Outcome, before.Runner)
	}
	if _, err := ov.Get(ctx, "openai"); err != nil {
		t.Fatalf("the kill removed the override by itself?: %v", err)
	}

	junit := filepath.Join(dir, "recover.xml")
	code, out, errOut := runRecover(t, jpath, "--junit", junit)
	if code != exitcode.OK {
		t.Fatalf("recover: exit %d\n%s%s", code, out, errOut)
	}
	if stale := fmt.Sprintf("the lock is stale: pid %d is gone", cmd.Process.Pid); !strings.Contains(errOut, stale) {
		t.Errorf("recover after the kill does not say the lock is stale (%q):\n%s", stale, errOut)
	}
	now := time.Now()
	j := readJournal(t, jpath)
	if j.Outcome != drill.OutcomeKilled || !j.RollbacksOK || len(j.Recoveries) != 1 || !j.Recoveries[0].OK || len(j.Recoveries[0].Rollbacks) != 3 {
		t.Fatalf("journal after recover: outcome %s ok %v recoveries %+v rollbacks %+v", j.Outcome, j.RollbacksOK, j.Recoveries, j.Rollbacks)
	}
	for _, rb := range j.Rollbacks {
		if rb.Status != drill.StatusOK || rb.RecoveredAt == nil {
			t.Errorf("rollback %s: %s %s", rb.ID, rb.Status, rb.Error)
		}
		if rb.ExpiresAt == nil || !now.Before(*rb.ExpiresAt) {
			t.Errorf("rollback %s: lever expires %v, want after the recovery (%s)", rb.ID, rb.ExpiresAt, now)
		}
	}
	// Nothing left behind: no override, the bucket full again.
	if _, err := ov.Get(ctx, "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("breaker#openai is still in the store: %v", err)
	}
	b, err := ratelimit.NewBuckets(s.store, nil, ratelimit.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.Get(ctx, "agent-1"); err != nil || !st.Full() {
		t.Errorf("agent-1's bucket after recover: %v tokens %v, want full as before", st.Tokens, err)
	}
	recs, err := audit.NewLog(s.store, nil, "local").List(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var recovered, cleared bool
	for _, r := range recs.Records {
		recovered = recovered || (r.Action == runner.ActionRecover && strings.Contains(r.Reason, "run "+j.RunID))
		cleared = cleared || (r.Action == breaker.ActionClear && r.RunID == j.RunID && strings.Contains(r.Reason, "recovered by "))
	}
	if !recovered || !cleared {
		t.Errorf("audit: recover record %v, recovered clear %v: %+v", recovered, cleared, recs)
	}
	if x := readFile(t, junit); !strings.Contains(x, `classname="drill.interrupted.recover"`) || !strings.Contains(x, `name="recovered_ok" value="true"`) {
		t.Errorf("JUnit lacks the recovery:\n%s", x)
	}

	assertRecoveredReport(t, j, jpath)

	// Idempotent: a second recover does nothing and says so.
	was := readFile(t, jpath)
	code, out, _ = runRecover(t, jpath)
	if code != exitcode.OK || !strings.Contains(out, "nothing to recover") {
		t.Errorf("second recover: exit %d: %s", code, out)
	}
	if readFile(t, jpath) != was {
		t.Error("a second recover rewrote the journal")
	}
}

// A journal is one run's: a second run (or a recover) cannot take it over
// while its lock is held.
func TestRunRefusesAJournalInUse(t *testing.T) {
	e := clitest.New(t)
	jpath := filepath.Join(t.TempDir(), "journal.json")
	lock, err := runner.LockJournal(jpath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	file := writeFile(t, "d.yaml", "name: d\ntimeout: 1m\nsteps:\n  - breaker.force-open: {dependency: openai}\n")
	r := e.Run("drill", "run", file, "--journal", jpath)
	if r.Code != exitcode.Conflict || !strings.Contains(r.Stderr, "is in use by a live drill run or recover") {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if _, err := overrides(t, e.Clock).Get(context.Background(), "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused run acted: %v", err)
	}
}
