package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
	"github.com/kosha-platform/koshactl/internal/gameday"
	"github.com/kosha-platform/koshactl/internal/store"
)

const freezeDrill = `
name: frozen
timeout: 1m
poll_interval: 20ms
steps:
  - breaker.force-open: {dependency: openai, for: 5m}
  - id: wait
    sleep: 30s
`

func (e *env) freezeRunner(reps ...Reporter) *Runner {
	return &Runner{Deps: e.Deps, Reporters: reps, Freeze: func(ctx context.Context) (*freeze.Freeze, error) { return freeze.Read(ctx, e.Table) }}
}

// While the fleet is frozen a drill does not start: nothing is done, the
// journal names the freeze, the run exits 7 (refused).
func TestADrillDoesNotStartWhileFrozen(t *testing.T) {
	e := newEnv(t)
	freezetest.Set(t, e.Table, e.Audit, "alice@laptop", "real incident", "INC-1", time.Now(), time.Hour)
	j := e.freezeRunner().Run(context.Background(), parse(t, freezeDrill))
	if j.Outcome != drill.OutcomeRefused || j.ExitCode != exitcode.Refused || !strings.Contains(j.Reason, "frozen by alice@laptop (INC-1)") {
		t.Fatalf("outcome %s, exit %d, reason %q: want refused (7) naming the freeze", j.Outcome, j.ExitCode, j.Reason)
	}
	if _, err := e.Table.Get(context.Background(), "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai's override: %v, want none: nothing is done", err)
	}
}

// A freeze set while a drill runs stops it at the next guard poll (the
// drill's sleep would last 30 s; the poll is every 20 ms) and rolls back
// every lever; the journal says who froze the fleet, for which incident.
func TestAFreezeStopsARunningDrillAndRollsItBack(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{on: func(ev Event) {
		if ev.Kind == EventStepStarted && ev.Step.ID == "wait" {
			freezetest.Set(t, e.Table, e.Audit, "alice@laptop", "real incident", "INC-1", time.Now(), time.Hour)
		}
	}}
	j := e.freezeRunner(rec).Run(context.Background(), parse(t, freezeDrill))
	if j.Outcome != drill.OutcomeStopped || j.Stop == nil || j.Stop.Condition != GuardFreeze || !strings.Contains(j.Reason, "frozen by alice@laptop (INC-1)") {
		t.Fatalf("outcome %s, stop %+v, reason %q: want stopped by the freeze, naming it", j.Outcome, j.Stop, j.Reason)
	}
	if stepByID(t, j, "wait").Status != drill.StatusStopped {
		t.Errorf("the sleep ended %s, want stopped", stepByID(t, j, "wait").Status)
	}
	if !j.RollbacksOK || len(j.Rollbacks) != 1 || j.Rollbacks[0].Status != drill.StatusOK {
		t.Fatalf("rollbacks %+v", j.Rollbacks)
	}
	if _, err := e.Table.Get(context.Background(), "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("openai's override after the rollback: %v, want none", err)
	}
	// The game-day report says who froze the fleet, for which incident.
	var report strings.Builder
	if err := gameday.Markdown(&report, gameday.Input{Journal: j}); err != nil {
		t.Fatal(err)
	}
	// (Markdown escapes the @.)
	if !strings.Contains(report.String(), `frozen by alice\@laptop (INC-1)`) {
		t.Errorf("the game-day report does not name the freeze:\n%s", report.String())
	}
}

// A freeze that cannot be read keeps the drill from starting (fail
// closed), with the store's exit code.
func TestADrillDoesNotStartWhenTheFreezeCannotBeRead(t *testing.T) {
	e := newEnv(t)
	r := e.freezeRunner()
	r.Freeze = func(context.Context) (*freeze.Freeze, error) { return nil, store.ErrUnavailable }
	j := r.Run(context.Background(), parse(t, freezeDrill))
	if j.Outcome != drill.OutcomeRefused || j.ExitCode != exitcode.Unavailable || j.Guard == nil || j.Guard.Role != RoleFreeze {
		t.Fatalf("outcome %s, exit %d, guard %+v: want refused, unavailable (5), the freeze's guard", j.Outcome, j.ExitCode, j.Guard)
	}
}
