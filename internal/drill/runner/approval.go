package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Authorizer is the table's policy asked before a run pulls any lever;
// *approval.Service implements it (its AuthorizeDrill is the rule).
type Authorizer interface {
	AuthorizeDrill(ctx context.Context, d approval.DrillRun, runner func(context.Context) (audit.Identity, error), requestID string) (approval.DrillAuthorization, error)
}

var _ Authorizer = (*approval.Service)(nil)

// DrillRun is d as the table's policy and a drill.run request see it, with
// its variables resolved from svc's environment as a run would (drill
// request builds the request from it). A variable that cannot be resolved
// is an error.
func DrillRun(d *drill.Drill, svc *runtime.Deps) (approval.DrillRun, error) {
	rc := runtime.NewRunContext(d, "PLAN", svc, nil)
	if err := rc.ResolveVars(); err != nil {
		return approval.DrillRun{}, err
	}
	return drillRun(rc, d), nil
}

// drillRun is the levers every step and rollback step of d would pull,
// planned on rc (its variables resolved).
func drillRun(rc *runtime.RunContext, d *drill.Drill) approval.DrillRun {
	dr := approval.DrillRun{File: d.File, Name: d.Name, SHA256: d.SHA256, Context: rc.Deps.ContextName, Levers: []approval.DrillLever{}}
	walk(rc, d, func(_ *drill.Step, _ string, l *runtime.PlanLever) {
		if l == nil || l.Action == "" {
			return
		}
		dl := approval.DrillLever{Action: l.Action, Target: l.Target}
		if l.Action == breaker.ActionForceOpen {
			dl.DurationSeconds = int64(l.ExpiresWithinSeconds)
		}
		if !slices.Contains(dr.Levers, dl) {
			dr.Levers = append(dr.Levers, dl)
		}
	})
	return dr
}

// authorize asks the table's policy about the drill's levers (variables
// resolved), before any lever: a run the policy needs approvals for goes
// on only with its approved drill.run request; otherwise it is refused,
// nothing done. It reports whether the run may go on.
func (u *run) authorize(ctx context.Context) bool {
	r, rc, j := u.jr, u.rc, u.j
	a := u.cfg.Approvals
	if a == nil {
		return true
	}
	who := u.cfg.Identity
	if who == nil {
		who = func(context.Context) (audit.Identity, error) { return audit.Identity{Actor: rc.Deps.Actor}, nil }
	}
	auth, err := a.AuthorizeDrill(ctx, drillRun(rc, u.d), who, u.cfg.Request)
	if err == nil {
		if auth.Request != nil {
			id := auth.Request.ID
			r.update(func() { j.Request = id })
			r.notice(fmt.Sprintf("the table's policy needs approvals for this drill's levers: approved by request %s (%s)", id, textsafe.Line(fmt.Sprint(auth.Request.Approvers))))
		}
		return true
	}
	return u.refuse("refused before any lever was pulled: "+err.Error(), nil, err)
}
