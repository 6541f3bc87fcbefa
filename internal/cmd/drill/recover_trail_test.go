package drill_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// A journal is a file that passes through other hands. These tests take
// the journal of a real run on the embedded store, edit it as a hostile
// hand would, and check that recover acts only on what the run's audit
// trail records.

const oneLever = "name: levers\ntimeout: 10m\nsteps:\n  - id: force\n    breaker.force-open: {dependency: openai, reason: drill}\n"

// realRun runs src with --journal on e's local store (it finishes and
// rolls back), and returns the journal's path and contents.
func realRun(t *testing.T, e *clitest.Env, src string) (string, drill.Journal) {
	t.Helper()
	jpath := filepath.Join(t.TempDir(), "journal.json")
	if r := e.Run("drill", "run", writeFile(t, "d.yaml", src), "--journal", jpath); r.Code != 0 {
		t.Fatalf("drill run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	return jpath, readJournal(t, jpath)
}

// killed edits j as a run SIGKILLed mid-run would leave it: running, its
// rollbacks pending, and its process gone.
func killed(t *testing.T, j *drill.Journal) {
	t.Helper()
	c := exec.CommandContext(t.Context(), "true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	j.Outcome, j.EndedAt = drill.OutcomeRunning, nil
	j.Runner.PID, j.Runner.ProcStart = c.Process.Pid, "gone/1"
	for i := range j.Rollbacks {
		j.Rollbacks[i].Status, j.Rollbacks[i].EndedAt = drill.StatusPending, nil
	}
}

func writeJournal(t *testing.T, path string, j drill.Journal) {
	t.Helper()
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func localStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(os.Getenv("KOSHACTL_STATE_DIR"), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func auditCount(t *testing.T, st *sqlite.Store) int {
	t.Helper()
	l, err := audit.NewLog(st, nil, "local").List(context.Background(), audit.Query{Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Records)
}

// The forged restore: a pending restore-override rollback with a
// before_override the drill never saw (alice's ARN, no expiry, a raw ESC in
// the reason) on a dependency the drill never touched. Recover refuses it,
// names the disagreement, and writes nothing: no override, no audit record,
// the journal as it was.
func TestRecoverRefusesAForgedRestore(t *testing.T) {
	e := clitest.New(t)
	jpath, j := realRun(t, e, oneLever)
	killed(t, &j)
	j.Rollbacks = append(j.Rollbacks, drill.RollbackRecord{ID: "rb-9", Step: "force", Subject: "breaker#core-api",
		Description: "restore the override of core-api", RegisteredAt: j.StartedAt, Status: drill.StatusPending,
		Lever: &drill.LeverRecord{Kind: drill.LeverOverride, Dependency: "core-api", Inverse: "restore-override",
			BeforeOverride: &drill.OverrideState{State: breaker.OverrideStateForcedOpen, Actor: "arn:aws:iam::123:user/alice",
				Reason: "ops \x1b[31mlock", CreatedAt: j.StartedAt, Version: 7}}})
	writeJournal(t, jpath, j)
	was := readFile(t, jpath)
	st := localStore(t)
	records := auditCount(t, st)

	r := e.Run("drill", "recover", jpath)
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "disagrees with the audit trail of run "+j.RunID) {
		t.Fatalf("forged restore: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	want := "disagreement: rollback rb-9 (breaker#core-api): the journal says the drill replaced or cleared an override held by \"arn:aws:iam::123:user/alice\", but the audit trail records no write of run " + j.RunID
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("the disagreement is not named (%q):\n%s", want, r.Stderr)
	}
	if _, err := overrides(t, e.Clock).Get(context.Background(), "core-api"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the forged override was written: %v", err)
	}
	if n := auditCount(t, st); n != records {
		t.Errorf("audit records %d, want %d: recover wrote something", n, records)
	}
	if readFile(t, jpath) != was {
		t.Error("the refused recover rewrote the journal")
	}
}

// Someone forces openai after the run, with the run's tag in the reason:
// alice, with the journal edited to name her as the run's actor; or the
// run's own actor (a shared CI role), with write_id dropped from the
// journal. Recover clears neither: the actor comes from the audit trail,
// and the override's write_id is no change the run recorded.
func TestRecoverDoesNotClearAnotherOperatorsOverride(t *testing.T) {
	for _, tc := range []struct {
		name      string
		forgeName bool
	}{
		{"forged actor", true},
		{"missing write_id", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := clitest.New(t)
			jpath, j := realRun(t, e, oneLever)
			killed(t, &j)
			ov := overrides(t, e.Clock)
			alice := "arn:aws:iam::123:user/alice"
			if !tc.forgeName {
				alice = j.Actor
			}
			force(t, e.Clock, levertest.Req{Dependency: "openai", Actor: alice,
				Reason: "drill levers run " + j.RunID + ": real incident", For: time.Hour})
			for i := range j.Rollbacks {
				if l := j.Rollbacks[i].Lever; l != nil {
					l.WriteID = ""
				}
			}
			if tc.forgeName {
				j.Actor = alice
			}
			writeJournal(t, jpath, j)

			r := e.Run("drill", "recover", jpath)
			if tc.forgeName {
				if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, `the journal names the run's actor "`+alice+`", but the audit trail records run `+j.RunID+`'s first write on it by "tester@test"`) {
					t.Fatalf("forged actor: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
			} else if r.Code != exitcode.OK || !strings.Contains(r.Stderr, "left alone: "+alice+" now holds it") {
				t.Fatalf("missing write_id: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if o, err := ov.Get(context.Background(), "openai"); err != nil || o.Actor != alice {
				t.Errorf("alice's override was touched: %+v %v", o, err)
			}
		})
	}
}

// A journal edited to point at another run (a real one, on another
// dependency) is refused: that run's audit trail records no write where
// the journal says.
func TestRecoverRefusesAJournalOfAnotherRun(t *testing.T) {
	e := clitest.New(t)
	jpath, j := realRun(t, e, oneLever)
	_, other := realRun(t, e, strings.ReplaceAll(oneLever, "openai", "core-api"))
	killed(t, &j)
	ov := overrides(t, e.Clock)
	// The state a kill leaves: the drill's override in place.
	force(t, e.Clock, levertest.Req{Dependency: "openai", Actor: "tester@test", Reason: "drill levers run " + other.RunID, For: time.Hour})
	j.RunID = other.RunID
	writeJournal(t, jpath, j)
	r := e.Run("drill", "recover", jpath)
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "disagreement: rollback rb-1 (breaker#openai): the journal says the drill's last change on it was ") ||
		!strings.Contains(r.Stderr, "no write of run "+other.RunID) {
		t.Fatalf("journal of another run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := ov.Get(context.Background(), "openai"); err != nil {
		t.Errorf("the override was cleared on the word of an edited journal: %v", err)
	}
}

// A lock the run left can be taken, yet the run's process is alive (a file
// system that does not honor flock): recover says which process, and
// refuses.
func TestRecoverRefusesWhileTheRunsProcessLives(t *testing.T) {
	e := clitest.New(t)
	jpath, j := realRun(t, e, oneLever)
	killed(t, &j)
	me := runner.ThisProcess("drill run", runner.LockPath(jpath))
	j.Runner = me
	writeJournal(t, jpath, j)
	r := e.Run("drill", "recover", jpath)
	want := fmt.Sprintf("a run is still going: pid %d started at %s on host %s, although its lock", me.PID, me.StartedAt.UTC().Format(time.RFC3339), me.Host)
	if r.Code != exitcode.Conflict || !strings.Contains(r.Stderr, want) {
		t.Fatalf("live process: exit %d (want %q)\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
}
