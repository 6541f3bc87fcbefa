package kinds

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
)

// BreakerForceOpenKind is the breaker.force-open step: force a dependency's
// breaker open fleet-wide with an override item.
//
//	breaker.force-open:
//	  dependency: openai      # required
//	  for: 2m                 # default: until the drill's deadline
//	  reason: provider outage # recorded after "drill NAME run ID: "
//	  overwrite: false        # replace an override someone else holds
//	  allow_unknown: false    # accept a dependency the context does not know
//	  wait: false             # then wait until the gauges confirm it (as --wait)
//
// The override expires at min(now+for, the drill's deadline, the context's
// max-override). Rollback clears it (or restores an override it replaced).
type BreakerForceOpenKind struct{}

var _ drill.MutatingKind = BreakerForceOpenKind{}

// Name implements StepKind.
func (BreakerForceOpenKind) Name() string { return "breaker.force-open" }

// Lever implements MutatingKind: a step moves a breaker override.
func (BreakerForceOpenKind) Lever() string { return drill.LeverOverride }

// Summary implements StepKind.
func (BreakerForceOpenKind) Summary() string {
	return "force a dependency's breaker open fleet-wide; expires by the drill's deadline; rollback clears it"
}

// Outputs implements StepKind.
func (BreakerForceOpenKind) Outputs() []string {
	return []string{"dependency", "expires_at", "version"}
}

// Decode implements StepKind.
func (BreakerForceOpenKind) Decode(d *drill.Decoder, n *yaml.Node) drill.Action {
	m := d.Map(n, "breaker.force-open")
	if m == nil {
		return nil
	}
	m.RejectUnknown("dependency", "for", "reason", "overwrite", "allow_unknown", "wait")
	a := &forceOpen{}
	ok := true
	a.dependency, ok = decodeDependency(m)
	if d, ok := m.Duration("for", false); ok {
		if err := breaker.CheckOverrideDuration(d); err != nil {
			m.Errorf("for", "%v", err)
		}
		a.forDur = d
	}
	a.reason, _ = m.Template("reason", false)
	a.overwrite, _ = m.Bool("overwrite")
	a.allowUnknown, _ = m.Bool("allow_unknown")
	a.wait, _ = m.Bool("wait")
	if !ok {
		return nil
	}
	return a
}

// overridePolicy is breaker's duration rule with the context's max-override.
func overridePolicy(rc *drill.RunContext) breaker.DurationPolicy {
	return breaker.DurationPolicy{Max: rc.Deps.MaxOverride}
}

type forceOpen struct {
	dependency   drill.Template
	forDur       time.Duration
	reason       drill.Template
	overwrite    bool
	allowUnknown bool
	wait         bool
}

var _ drill.Mutating = (*forceOpen)(nil)

func (a *forceOpen) Describe(rc *drill.RunContext) string {
	how := "until the drill's deadline"
	if a.forDur > 0 {
		how = "for " + human.Duration(a.forDur)
	}
	return fmt.Sprintf("force %s open %s", rc.Describe(a.dependency), how)
}

func (a *forceOpen) Prepare(ctx context.Context, rc *drill.RunContext) (drill.Rollback, error) {
	dep, moved, err := overrideLeverDependency(rc, a.dependency, a.allowUnknown)
	if err != nil || moved {
		return nil, err
	}
	svc := rc.Deps
	// The lever's own rule on the override read: a conflict surfaces
	// before the drill starts. The force itself is decided and written
	// once, by Run.
	var before *breaker.Override
	switch cur, err := svc.Overrides.Get(ctx, dep); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		before = &cur
	}
	err = breaker.CheckForce(breaker.ForceRequest{Dependency: dep, Overwrite: a.overwrite}, before, rc.Now())
	if errors.Is(err, breaker.ErrConflict) {
		return nil, fmt.Errorf("%w: set overwrite: true to replace it for the drill (rollback restores it)", err)
	}
	if err != nil {
		return nil, err
	}
	l := rc.NewLever(breaker.OverrideKey(dep), before)
	return &overrideRollback{dependency: dep, lever: l}, nil
}

func (a *forceOpen) Run(ctx context.Context, rc *drill.RunContext) (*drill.Outputs, error) {
	svc := rc.Deps
	dep, err := rc.Expand(a.dependency)
	if err != nil {
		return nil, err
	}
	reason, err := stepReason(rc, a.reason)
	if err != nil {
		return nil, err
	}
	dur, byDeadline, err := overridePolicy(rc).Bounded(rc.Now(), rc.Deadline(), a.forDur)
	if err != nil {
		return nil, fmt.Errorf("force %s open: the drill has %s left, under the %s minimum override (the fleet would never see it)", dep, human.Duration(dur), human.Duration(breaker.MinOverride))
	}
	l, _ := rc.Lever(breaker.OverrideKey(dep))
	req := breaker.ForceRequest{Dependency: dep, Reason: rc.Reason(reason), Actor: svc.Actor, For: dur, Overwrite: a.overwrite}
	// The drill's own override (an earlier step's) is replaced, but only
	// that write of it.
	switch cur, err := svc.Overrides.Get(ctx, dep); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	case l != nil && mine(l, cur):
		req.SeenVersion = &cur.Version
	}
	if byDeadline {
		// The deadline itself, not Remaining() measured before the write:
		// Force stamps created_at later, and created_at + a duration read
		// earlier can land past the deadline. Force rounds it down to the ms.
		req.For, req.ExpiresAt = 0, rc.Deadline()
	}
	outs, err := svc.Overrides.ForceAll(ctx, rc.Audit(), breaker.ForceAll{Requests: []breaker.ForceRequest{req}})
	if len(outs) == 0 {
		return nil, err
	}
	o := outs[0]
	res := o.Result
	if l != nil && (o.Written || errors.Is(o.Err, store.ErrOutcomeUnknown)) {
		// Written, or perhaps (the store could not be reached to tell):
		// the rollback restores only while the item carries this change's
		// write_id, so it is right either way.
		after := res.After
		l.SetWritten(overrideWrite{change: after.WriteID, after: &after}, after.ExpiresAt)
	}
	if err != nil {
		return nil, err
	}
	rc.Recorded(o.Record)
	out := drill.NewOutputs().Set("dependency", dep).Set("expires_at", res.After.ExpiresAt.UTC().Format(time.RFC3339Nano)).
		Set("version", strconv.FormatInt(res.After.Version, 10))
	out.Detail = fmt.Sprintf("forced open until %s", res.After.ExpiresAt.UTC().Format(time.RFC3339))
	if byDeadline {
		out.Detail += " (the drill's deadline)"
	}
	out.Detail += confirmed(res.Confirmed)
	if a.wait {
		fleet, rec, err := waitFleet(ctx, rc, metrics.Change{Dependency: dep, Goal: metrics.GoalForced, Since: res.After.CreatedAt})
		if err != nil {
			return nil, err
		}
		out.Detail += "; " + fleet
		out.Fleet = rec
	}
	return out, nil
}
