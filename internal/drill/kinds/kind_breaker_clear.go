package kinds

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
)

// BreakerClearKind is the breaker.clear step: delete a dependency's
// override, so the fleet's breakers go back to their own state.
//
//	breaker.clear:
//	  dependency: openai   # required
//	  reason: recovered
//	  allow_unknown: false
//	  wait: false          # then wait until no instance reports forced (as --wait)
//
// Clearing the drill's own override needs no new rollback (the force-open's
// rollback finds it gone). Clearing someone else's override registers a
// rollback that puts it back.
type BreakerClearKind struct{}

var _ drill.MutatingKind = BreakerClearKind{}

// Name implements StepKind.
func (BreakerClearKind) Name() string { return "breaker.clear" }

// Lever implements MutatingKind: a step moves a breaker override.
func (BreakerClearKind) Lever() string { return drill.LeverOverride }

// Summary implements StepKind.
func (BreakerClearKind) Summary() string {
	return "clear a dependency's override; rollback restores an override the drill did not write"
}

// Outputs implements StepKind.
func (BreakerClearKind) Outputs() []string { return []string{"dependency", "cleared"} }

// Decode implements StepKind.
func (BreakerClearKind) Decode(d *drill.Decoder, n *yaml.Node) drill.Action {
	m := d.Map(n, "breaker.clear")
	if m == nil {
		return nil
	}
	m.RejectUnknown("dependency", "reason", "allow_unknown", "wait")
	a := &clearOverride{}
	var ok bool
	a.dependency, ok = decodeDependency(m)
	a.reason, _ = m.Template("reason", false)
	a.allowUnknown, _ = m.Bool("allow_unknown")
	a.wait, _ = m.Bool("wait")
	if !ok {
		return nil
	}
	return a
}

type clearOverride struct {
	dependency   drill.Template
	reason       drill.Template
	allowUnknown bool
	wait         bool
}

var _ drill.Mutating = (*clearOverride)(nil)

func (a *clearOverride) Describe(rc *drill.RunContext) string {
	return fmt.Sprintf("clear the override of %s", rc.Describe(a.dependency))
}

func (a *clearOverride) Prepare(ctx context.Context, rc *drill.RunContext) (drill.Rollback, error) {
	dep, moved, err := overrideLeverDependency(rc, a.dependency, a.allowUnknown)
	if err != nil || moved {
		return nil, err
	}
	svc := rc.Deps
	cur, err := svc.Overrides.Get(ctx, dep)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !cur.ActiveAt(rc.Now()) {
		return nil, nil
	}
	l := rc.NewLever(breaker.OverrideKey(dep), &cur)
	return &overrideRollback{dependency: dep, lever: l}, nil
}

func (a *clearOverride) Run(ctx context.Context, rc *drill.RunContext) (*drill.Outputs, error) {
	svc := rc.Deps
	dep, err := rc.Expand(a.dependency)
	if err != nil {
		return nil, err
	}
	reason, err := stepReason(rc, a.reason)
	if err != nil {
		return nil, err
	}
	// An override someone else forced while the drill ran is theirs: the
	// drill clears only its own, or the one it found (and will restore),
	// and deletes it only as read here.
	l, _ := rc.Lever(breaker.OverrideKey(dep))
	var read *breaker.Override
	switch cur, err := svc.Overrides.Get(ctx, dep); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if l != nil && cur.ActiveAt(rc.Now()) && !mine(l, cur) && !sameOverride(l.Before, cur) {
			return nil, fmt.Errorf("%w: it was forced during the drill; the drill clears only its own override",
				&breaker.ConflictError{Current: cur})
		}
		read = &cur
	}
	outs, err := svc.Overrides.ClearAll(ctx, rc.Audit(), breaker.ClearAll{Dependencies: []string{dep}, Reason: rc.Reason(reason),
		Actor: func(context.Context) (string, error) { return svc.Actor, nil }, Read: map[string]*breaker.Override{dep: read}})
	if len(outs) == 0 {
		return nil, err
	}
	o := outs[0]
	if l != nil && (o.Written || errors.Is(o.Err, store.ErrOutcomeUnknown)) {
		// Deleted (or perhaps): the rollback puts back what was there
		// before the drill only while the override is still absent.
		l.SetWritten(overrideWrite{change: o.Record.Change}, rc.Now())
	}
	if err != nil {
		return nil, err
	}
	cleared := o.Result.Before != nil
	out := drill.NewOutputs().Set("dependency", dep).Set("cleared", strconv.FormatBool(cleared))
	if o.Written {
		rc.Recorded(o.Record)
		out.Detail = strings.TrimPrefix(confirmed(o.Result.Confirmed), " ")
	}
	if a.wait {
		fleet, rec, err := waitFleet(ctx, rc, metrics.Change{Dependency: dep, Goal: metrics.GoalReleased, Since: rc.Now()})
		if err != nil {
			return nil, err
		}
		out.Detail, out.Fleet = strings.TrimPrefix(out.Detail+"; "+fleet, "; "), rec
	}
	return out, nil
}

// sameOverride reports whether before (a lever's state before the drill)
// is the override cur.
func sameOverride(before any, cur breaker.Override) bool {
	b, ok := before.(*breaker.Override)
	if !ok || b == nil {
		return false
	}
	if b.Raw != nil && cur.Raw != nil {
		// Both as stored: a malformed item has no trustworthy version.
		return maps.Equal(b.Raw, cur.Raw)
	}
	return breaker.SameWrite(*b, cur)
}

// stepReason is the reason a step's change is recorded with: the step's
// reason: when it names one, else "step ID".
func stepReason(rc *drill.RunContext, t drill.Template) (string, error) {
	if t.IsZero() {
		return "step " + rc.CurrentStep(), nil
	}
	return rc.Expand(t)
}
