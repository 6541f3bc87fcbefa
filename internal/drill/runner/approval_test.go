package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// The drill's lever target is a variable: the policy judges it resolved.
const fourEyesDrill = `
name: four-eyes-drill
timeout: 10m
vars:
  dep: openai
steps:
  - id: force
    breaker.force-open: {dependency: "${vars.dep}", for: 5m}
`

var (
	alice = audit.Identity{Actor: "arn:aws:iam::123456789012:user/alice", Source: audit.ActorSTS, UserID: "AIDAALICE"}
	bob   = audit.Identity{Actor: "arn:aws:iam::123456789012:user/bob", Source: audit.ActorSTS, UserID: "AIDABOB"}
)

// fourEyesEnv is a drill environment on the embedded store holding
// docs/policies/four-eyes.cedar, and the approvals of that table on a fake
// clock.
type fourEyesEnv struct {
	*env
	s   store.Store
	svc *approval.Service
	clk *clocktest.Fake
}

func newFourEyes(t *testing.T) *fourEyesEnv {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e := newEnvOn(t, s)
	clk := clocktest.NewFake(time.Now())
	text, err := os.ReadFile("../../../docs/policies/four-eyes.cedar")
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.Parse(approval.PolicySchema(levertest.Specs()), "four-eyes.cedar", text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.NewPolicies(s, clk, approval.PolicySchema(levertest.Specs())).Set(ctx, e.Audit, set, audit.Identity{Actor: "admin", Source: audit.ActorUnverified}, "four eyes"); err != nil {
		t.Fatal(err)
	}
	return &fourEyesEnv{env: e, s: s, svc: approval.NewService(s, clk, e.Deps.Levers, e.Deps.ContextName), clk: clk}
}

// run runs d as alice with request id.
func (e *fourEyesEnv) run(d *drill.Drill, id string) (*drill.Journal, string) {
	e.T.Helper()
	var log strings.Builder
	r := &Runner{Deps: e.Deps, Reporters: []Reporter{&LiveLog{W: &log}}, Approvals: e.svc, Request: id,
		Identity: func(context.Context) (audit.Identity, error) { return alice, nil }}
	return r.Run(context.Background(), d), log.String()
}

// approved is alice's drill.run request for d, approved by bob.
func (e *fourEyesEnv) approved(d *drill.Drill) approval.Request {
	e.T.Helper()
	ctx := context.Background()
	dr, err := DrillRun(d, e.Deps)
	if err != nil {
		e.T.Fatal(err)
	}
	r, _, err := e.svc.SubmitDrill(ctx, e.Audit, dr, alice, "game day", time.Hour)
	if err != nil {
		e.T.Fatal(err)
	}
	res, err := e.svc.Approve(ctx, e.Audit, approval.Approval{ID: r.ID, Approver: bob, SHA256: r.SHA256})
	if err != nil || !res.Authorized || res.Applied || res.Request.Status != approval.StatusApproved {
		e.T.Fatalf("approve: %+v, %v: want it approved, nothing applied", res, err)
	}
	return res.Request
}

// refused checks that the run was refused with code before any lever:
// nothing written but what was there before (records counts them).
func (e *fourEyesEnv) refused(j *drill.Journal, log string, code int, records int, says string) {
	e.T.Helper()
	if j.Outcome != drill.OutcomeRefused || j.ExitCode != code || !strings.Contains(j.Reason, says) {
		e.T.Fatalf("outcome %s, exit %d, reason %q: want refused, exit %d, saying %q\n%s", j.Outcome, j.ExitCode, j.Reason, code, says, log)
	}
	if strings.Contains(j.Reason, "\n") {
		e.T.Errorf("reason is not one line: %q", j.Reason)
	}
	if _, err := e.s.Get(context.Background(), breaker.OverrideKey("openai")); err == nil {
		e.T.Error("a refused drill forced openai")
	}
	if got := len(e.auditRecords()); got != records {
		e.T.Errorf("%d audit records after a refused run, want %d: it wrote something", got, records)
	}
	if stepByID(e.T, j, "force").Status != drill.StatusSkipped || len(j.Rollbacks) != 0 {
		e.T.Errorf("steps %+v, rollbacks %+v: want every step skipped, nothing rolled back", j.Steps, j.Rollbacks)
	}
}

func TestFourEyesDrillWithoutRequestIsRefused(t *testing.T) {
	e := newFourEyes(t)
	before := len(e.auditRecords())
	j, log := e.run(parse(t, fourEyesDrill), "")
	e.refused(j, log, exitcode.Pending, before, "koshactl drill request")
	x, err := JUnit(j)
	if err != nil || !strings.Contains(string(x), `type="approval"`) || !strings.Contains(string(x), `errors="1"`) {
		t.Errorf("JUnit of a run the policy refused: %v, want one approval error:\n%s", err, x)
	}
}

func TestFourEyesDrillWithApprovedRequestRuns(t *testing.T) {
	e := newFourEyes(t)
	d := parse(t, fourEyesDrill)
	r := e.approved(d)
	if _, err := e.s.Get(context.Background(), breaker.OverrideKey("openai")); err == nil {
		t.Fatal("approving a drill request forced openai: it must apply nothing")
	}
	if !strings.Contains(r.Change.Summary(), "breaker.force-open openai") {
		t.Errorf("request summary %q: want the lever with its variable resolved", r.Change.Summary())
	}
	j, log := e.run(d, r.ID)
	if j.ExitCode != exitcode.OK || j.Request != r.ID {
		t.Fatalf("exit %d, request %q: want passed with request %s\n%s", j.ExitCode, j.Request, r.ID, log)
	}
	if len(e.records(breaker.ActionForceOpen, breaker.OverrideKey("openai"))) != 1 {
		t.Error("the approved drill did not force openai")
	}
}

func TestFourEyesDrillEditedSinceApprovalIsRefused(t *testing.T) {
	e := newFourEyes(t)
	r := e.approved(parse(t, fourEyesDrill))
	before := len(e.auditRecords())
	edited := parse(t, strings.Replace(fourEyesDrill, "for: 5m", "for: 9m", 1))
	j, log := e.run(edited, r.ID)
	e.refused(j, log, exitcode.Mismatch, before, "edited since")
}

func TestFourEyesDrillWithOtherVarsIsRefused(t *testing.T) {
	e := newFourEyes(t)
	d := parse(t, fourEyesDrill)
	r := e.approved(d)
	before := len(e.auditRecords())
	d.Vars[0].Value = drill.Literal("core-api")
	j, log := e.run(d, r.ID)
	if j.Outcome != drill.OutcomeRefused || j.ExitCode != exitcode.Mismatch || !strings.Contains(j.Reason, "core-api") {
		t.Fatalf("outcome %s, exit %d, reason %q: want refused (14) naming the other lever\n%s", j.Outcome, j.ExitCode, j.Reason, log)
	}
	if got := len(e.auditRecords()); got != before {
		t.Errorf("%d audit records, want %d", got, before)
	}
}

func TestFourEyesDrillWithExpiredRequestIsRefused(t *testing.T) {
	e := newFourEyes(t)
	d := parse(t, fourEyesDrill)
	r := e.approved(d)
	before := len(e.auditRecords())
	e.clk.Advance(time.Hour)
	j, log := e.run(d, r.ID)
	e.refused(j, log, exitcode.Closed, before, "expired")
}

func TestFourEyesDrillWithPendingRequestIsRefused(t *testing.T) {
	e := newFourEyes(t)
	d := parse(t, fourEyesDrill)
	dr, err := DrillRun(d, e.Deps)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := e.svc.SubmitDrill(context.Background(), e.Audit, dr, alice, "game day", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	before := len(e.auditRecords())
	j, log := e.run(d, r.ID)
	e.refused(j, log, exitcode.Pending, before, "still waits")
}

// A drill pulling no lever the policy names (a sleep) needs no request.
func TestFourEyesDrillWithoutLeversRuns(t *testing.T) {
	e := newFourEyes(t)
	j, log := e.run(parse(t, "name: calm\ntimeout: 1m\nsteps:\n  - id: nap\n    sleep: 1ms\n"), "")
	if j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", j.ExitCode, j.Reason, log)
	}
}
