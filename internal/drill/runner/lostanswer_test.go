package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// A drill's lever and its rollback on DynamoDB (moto's server) behind the
// fault proxy, each with its answer lost the ways an answer goes missing:
// the connection reset after the transaction applied; the answer withheld
// and the run interrupted (the step by the run's signal, the rollback by
// the operator abandoning it); the request stalled before it reached the
// store and the run interrupted. Every change is settled as landed
// ("confirmed" where an answer was lost after it applied), with exactly
// one record, and the journal names exactly those records.
func TestDrillLeverAndRollbackWithLostAnswersAreRecordedOnce(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	for _, tc := range []struct {
		name      string
		fault     faultproxy.Fault
		interrupt bool
		// confirmed: the change applied before its answer was lost, so
		// the drill says it was confirmed.
		confirmed bool
	}{
		{"reset after apply", faultproxy.Reset, false, true},
		{"answer withheld, interrupted", faultproxy.Withhold, true, true},
		{"request stalled, interrupted", faultproxy.Stall, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := faultproxy.Start(t, endpoint)
			e := newEnvOn(t, dynamotest.NewStore(t, p.URL()))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rbCtx, abandon := context.WithCancel(context.Background())
			defer abandon()
			// lose loses the next transaction's answer, and interrupts
			// stop once it is lost (or stalled).
			lose := func(stop context.CancelFunc) {
				p.LoseNext("TransactWriteItems", 1, tc.fault)
				if !tc.interrupt {
					return
				}
				lost, stalled := p.Lost("TransactWriteItems"), p.Stalled("TransactWriteItems")
				go func() {
					if tc.fault == faultproxy.Stall {
						p.WaitStalled(t, "TransactWriteItems", stalled+1)
					} else {
						p.WaitLost(t, "TransactWriteItems", lost+1)
					}
					stop()
				}()
			}
			faults := &recorder{on: func(ev Event) {
				switch {
				case ev.Kind == EventStepStarted && ev.Step.ID == "force":
					lose(cancel)
				case ev.Kind == EventPhase && ev.Phase == drill.PhaseRollback:
					lose(abandon)
				}
			}}
			var log strings.Builder
			r := &Runner{Deps: e.Deps, Reporters: []Reporter{&LiveLog{W: &log}, faults}, RollbackContext: rbCtx}
			j := r.Run(ctx, parse(t, forceOnly))

			hit := p.Lost("TransactWriteItems")
			if tc.fault == faultproxy.Stall {
				hit = p.Stalled("TransactWriteItems")
			}
			if hit != 2 {
				t.Fatalf("the proxy hit %d transactions, want the force's and the rollback's\n%s", hit, log.String())
			}
			step, rb := stepByID(t, j, "force"), j.Rollbacks[0]
			if step.Status != drill.StatusPassed && (!tc.interrupt || step.Status != drill.StatusInterrupted) {
				t.Fatalf("step %+v\n%s", step, log.String())
			}
			if !j.RollbacksOK || rb.Status != drill.StatusOK || rb.Detail == "" || !strings.HasPrefix(rb.Detail, "cleared") {
				t.Fatalf("rollback %+v, want the drill's override cleared\n%s", rb, log.String())
			}
			if tc.confirmed && (!strings.Contains(rb.Detail, store.ConfirmedNote) || (step.Status == drill.StatusPassed && !strings.Contains(step.Detail, store.ConfirmedNote))) {
				t.Errorf("step %q, rollback %q: want each confirmed", step.Detail, rb.Detail)
			}
			if out := log.String(); strings.Contains(out, "NOT AUDITED") || strings.Contains(out, "repair") || strings.Contains(out, "NOT RESTORED") {
				t.Errorf("live log:\n%s", out)
			}
			l, err := e.Audit.List(context.Background(), audit.Query{Scan: true, Subject: "breaker#openai"})
			if err != nil {
				t.Fatal(err)
			}
			var forces, clears []audit.Record
			for _, rec := range l.Records {
				switch rec.Action {
				case breaker.ActionForceOpen:
					forces = append(forces, rec)
				case breaker.ActionClear:
					clears = append(clears, rec)
				}
			}
			if len(forces) != 1 || len(clears) != 1 {
				t.Fatalf("%d force and %d clear records, want exactly one each: %+v", len(forces), len(clears), l.Records)
			}
			if _, err := e.Overrides.Get(context.Background(), "openai"); err == nil {
				t.Error("the drill's override is still stored")
			}
			if len(j.Audit) != 2 || j.Audit[0].ID != forces[0].ID || j.Audit[1].ID != clears[0].ID {
				t.Errorf("journal audit refs %+v, want the force's %s and the clear's %s", j.Audit, forces[0].ID, clears[0].ID)
			}
		})
	}
}
