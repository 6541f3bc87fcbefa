package runner

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// refuseRecordsAtRollback is a reporter that, when the rollback phase
// begins, makes the store refuse every audit record (as IAM would) but
// store the claims a clear writes first: each rollback's change lands and
// its record does not.
func refuseRecordsAtRollback(e *env) *recorder {
	return &recorder{on: func(ev Event) {
		if ev.Kind == EventPhase && ev.Phase == PhaseRollback {
			e.store.mu.Lock()
			e.store.denyPut, e.store.allowPut = audit.Prefix, audit.ClaimPrefix
			e.store.mu.Unlock()
		}
	}}
}

const forceAndDrain = `
name: unaudited
timeout: 10m
steps:
  - id: force
    breaker.force-open: {dependency: openai, for: 5m}
  - id: drain
    ratelimit.drain: {client: agent-1, for: 5m}
`

// drill run whose rollbacks' changes land but whose audit records are
// refused says what drill recover says of the same: each lever is
// restored, not audited (once: not retried into "already" done), a clear
// names the audit repair that writes its record from its claim, a
// bucket's change is for a person to record; rollbacks_ok stays true and
// the run exits 8, not 9: no lever is left pulled. The live log, the
// summary, the JUnit report and the end notification say restored, not
// "not restored" or "lapses on its own".
func TestRunRollbackWhoseRecordIsRefusedIsRestoredNotAudited(t *testing.T) {
	e := newEnv(t)
	rcv := notifytest.Start(t, notifytest.Accept)
	var log strings.Builder
	r := &Runner{Deps: e.svc, Reporters: []Reporter{refuseRecordsAtRollback(e), &LiveLog{W: &log}},
		Notifier: &notify.Dispatcher{Context: "test", Clock: e.clock, Sinks: []notify.Sink{&notify.Webhook{SinkName: "hook", URL: rcv.URL()}}}}
	j := r.Run(context.Background(), parse(t, forceAndDrain))
	if j.Outcome != drill.OutcomePassed || !j.RollbacksOK || j.ExitCode != drill.ExitUnaudited || drill.ExitUnaudited != 8 {
		t.Fatalf("outcome %s, rollbacks ok %v, exit %d; want passed, true, 8\n%s", j.Outcome, j.RollbacksOK, j.ExitCode, log.String())
	}
	for _, rb := range j.Rollbacks {
		if rb.Status != drill.StatusUnaudited || rb.Attempts != 1 || !strings.Contains(rb.Error, "audit record not written") {
			t.Errorf("rollback %s (%s): status %q, %d attempt(s), error %q; want unaudited after one attempt", rb.ID, rb.Subject, rb.Status, rb.Attempts, rb.Error)
		}
		switch rb.Subject {
		case breaker.OverrideKey("openai"):
			if rb.Detail != "cleared, but its audit record was not written" ||
				!strings.Contains(rb.Error, "; write it with: koshactl --context 'test' audit repair 'breaker#openai' --write-id '") {
				t.Errorf("openai rollback: detail %q, error %q; want the clear and the repair that writes its record", rb.Detail, rb.Error)
			}
		default:
			if !strings.Contains(rb.Error, "record the change by hand") || strings.Contains(rb.Error, "write it with:") {
				t.Errorf("%s rollback: error %q; want it recorded by hand (a bucket's change has no repair)", rb.Subject, rb.Error)
			}
		}
	}
	if e.store.has(breaker.OverrideKey("openai")) {
		t.Error("the drill's override is still stored: the clear did not land")
	}
	if st, err := e.bk.Get(context.Background(), "agent-1"); err != nil || st.Tokens != ratelimit.DefaultCapacity {
		t.Errorf("agent-1 after the rollback: %+v, %v; want its tokens back", st, err)
	}
	out := log.String()
	if strings.Contains(out, "NOT RESTORED") || strings.Contains(out, "lapses on its own") || strings.Contains(out, "FAIL") ||
		strings.Count(out, "UNAUDITED ") != 2 || strings.Count(out, "restored, not audited: ") != 2 || strings.Count(out, "but audit record not written") != 2 ||
		!strings.Contains(out, "0/2 rollbacks ok, 2 restored but not audited") || !strings.Contains(out, "(exit 8)") {
		t.Errorf("live log calls a restored lever not restored, or does not say its record is missing:\n%s", out)
	}
	ju, err := JUnit(j)
	if err != nil {
		t.Fatal(err)
	}
	if x := string(ju); strings.Contains(x, "<failure") || strings.Count(x, `type="rollback-unaudited"`) != 2 ||
		strings.Count(x, `message="restored, not audited: `) != 2 || !strings.Contains(x, `"rollbacks_ok" value="true"`) {
		t.Errorf("JUnit report does not say restored, not audited:\n%s", x)
	}
	evs := rcv.Events(t)
	if len(evs) != 2 || evs[1].Action != notify.ActionDrillFinished {
		t.Fatalf("events %+v", evs)
	}
	end := evs[1]
	if !strings.Contains(end.Detail, "exit 8") || !strings.Contains(end.Detail, "2 restored but not audited") || len(end.Levers) != 2 {
		t.Errorf("end notification %+v", end)
	}
	for _, l := range end.Levers {
		if !strings.HasPrefix(l.Change, "moved by the drill, rolled back, but its audit record was not written: ") || l.ExpiresAt != nil {
			t.Errorf("lever %s: %q (expires %v); want rolled back, its record missing", l.Subject, l.Change, l.ExpiresAt)
		}
	}
}

// A rollback that failed still wins: with one lever restored unaudited and
// another left pulled, the run exits 9 and rollbacks_ok is false; the
// summary says both.
func TestRunWithUnauditedAndFailedRollbacksExits9(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.store.failDelete = breaker.OverrideKey("openai")
		var log strings.Builder
		r := &Runner{Deps: e.svc, Reporters: []Reporter{refuseRecordsAtRollback(e), &LiveLog{W: &log}}}
		j := r.Run(context.Background(), parse(t, forceAndDrain+"rollback_timeout: 5s\n"))
		if j.RollbacksOK || j.ExitCode != drill.ExitRollbackFailed {
			t.Fatalf("rollbacks ok %v, exit %d; want false, 9\n%s", j.RollbacksOK, j.ExitCode, log.String())
		}
		got := map[string]string{}
		for _, rb := range j.Rollbacks {
			got[rb.Subject] = rb.Status
		}
		if got[breaker.OverrideKey("openai")] != drill.StatusFailed || got[ratelimit.Key("agent-1")] != drill.StatusUnaudited {
			t.Errorf("statuses %v; want openai failed, agent-1 unaudited", got)
		}
		if out := log.String(); !strings.Contains(out, "0/2 rollbacks ok, 1 restored but not audited") || !strings.Contains(out, "SOME LEVERS WERE NOT RESTORED") {
			t.Errorf("summary:\n%s", out)
		}
	})
}
