package kinds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// What the lever files (lever_override.go, lever_bucket.go,
// lever_chaos.go) share: each holds one lever's kinds, plan, rollback,
// journal record and recovery.

// stepReason is the reason a step's change is recorded with: the step's
// reason: when it names one, else "step ID".
func stepReason(rc *runtime.RunContext, t drill.Template) (string, error) {
	why := "step " + rc.CurrentStep()
	if !t.IsZero() {
		var err error
		if why, err = rc.Expand(t); err != nil {
			return "", err
		}
	}
	rc.SetStepReason(why)
	return why, nil
}

// confirmed is the note a change whose first answer was lost carries.
func confirmed(c bool) string {
	if !c {
		return ""
	}
	return " (" + store.ConfirmedNote + ")"
}

// expiryText says when an override lapses.
func expiryText(t time.Time) string {
	if t.IsZero() {
		return "no expiry"
	}
	return "expires " + t.UTC().Format(time.RFC3339)
}

// policyTarget is a lever's target as the table's policy judges it: t
// resolved, or "" while it names a step's output (known only during the
// run).
func policyTarget(rc *runtime.RunContext, t drill.Template) string {
	s, _ := rc.Expand(t) // "" when it cannot be expanded
	return s
}

// waitFleet waits until the gauges confirm c, within the source's bound plus
// a margin, bounded by the drill's deadline. It adds what was confirmed to
// out's detail and the journal's record of it to out; not confirmed is the
// step's failure, a *runtime.FleetError carrying the record (the lever is
// already recorded, so the rollback runs).
func waitFleet(ctx context.Context, rc *runtime.RunContext, out *runtime.Outputs, c metrics.Change) error {
	gs, ok := runtime.SourcerOf(rc.Deps.Gauges)
	if !ok {
		return runtime.NeedService(false, "metrics source to wait on (set metrics_url, or run with the context's metrics)")
	}
	src, err := gs.Source(ctx)
	if err != nil {
		return fmt.Errorf("wait for the fleet: %w", err)
	}
	timeout := metrics.DefaultWaitTimeout(metrics.LagOf(src))
	if left := rc.Remaining(); left < timeout {
		timeout = left
	}
	w := &metrics.Waiter{Gauges: src, Clock: rc.Clock(), Timeout: timeout}
	res, err := w.Wait(ctx, []metrics.Change{c})
	cv := res.Convergences[0]
	rec := &drill.FleetRecord{Dependency: c.Dependency, Goal: c.Goal.String(), Confirmed: err == nil, Summary: rc.Redact(cv.Summary()),
		ElapsedSeconds: drill.Seconds(cv.Elapsed), TimeoutSeconds: drill.Seconds(timeout)}
	if err != nil {
		return &runtime.FleetError{Fleet: rec,
			Err: fmt.Errorf("the fleet did not confirm %s %s within %s: %s", c.Dependency, c.Goal, human.Duration(timeout), cv.Summary())}
	}
	out.Detail = joinDetail(out.Detail, fmt.Sprintf("fleet confirmed: %s after %s", cv.Summary(), human.Duration(cv.Elapsed)))
	out.Fleet = rec
	return nil
}

// A dependency named by a step (the override lever) or a condition
// (breaker): its literal checked when the file is parsed, its templated
// value when the run expands it.

// checkDependency validates a dependency name at run time (after
// templating): its shape, and that the context knows it.
func checkDependency(rc *runtime.RunContext, dep string, allowUnknown bool) error {
	known := rc.Deps.KnownDependencies
	if allowUnknown || len(known) == 0 {
		return breaker.ValidateDependency(dep)
	}
	var unknown *breaker.UnknownDependencyError
	if err := breaker.CheckKnownDependency(dep, known); !errors.As(err, &unknown) {
		return err
	}
	return fmt.Errorf("unknown dependency %q: context %q knows %s%s (set allow_unknown: true to use it anyway)",
		dep, rc.Deps.ContextName, strings.Join(known, ", "), unknown.DidYouMean())
}

// decodeTarget reads the required field key naming a lever's target (a
// dependency, a client), checking a literal name with valid.
func decodeTarget(m *drill.Map, key string, valid func(string) error) (drill.Template, bool) {
	t, ok := m.Template(key, true)
	if s, static := t.Static(); ok && static {
		if err := valid(s); err != nil {
			m.Errorf(key, "%v", err)
			return t, false
		}
	}
	return t, ok
}

// decodeDependency reads the dependency field, checking a literal name.
func decodeDependency(m *drill.Map) (drill.Template, bool) {
	return decodeTarget(m, "dependency", breaker.ValidateDependency)
}

// decodeClient reads the client field, checking a literal client id.
func decodeClient(m *drill.Map) (drill.Template, bool) {
	return decodeTarget(m, "client", ratelimit.ValidateClientID)
}

// changeOne makes c, a change of one target of a store lever, decided on
// read (the target's item as the step read it: nil when absent) and
// written conditional on it, quietly (the run announces itself): its
// outcome, nil when nothing was made.
func changeOne(ctx context.Context, rc *runtime.RunContext, c lever.Change, read store.Item) (*lever.Outcome, error) {
	c.Actor, c.NoNotify, c.Read = rc.Deps.Actor, true, map[string]store.Item{c.Targets[0]: read}
	rep, err := rc.Levers().Change(ctx, c)
	if len(rep.Outcomes) == 0 {
		return nil, err
	}
	return &rep.Outcomes[0], err
}

// storeTarget is the target a store lever step names in t, expanded and
// checked with check, and the lever of its item (key(target)) when a step
// moved it already (nil: not yet).
func storeTarget(rc *runtime.RunContext, t drill.Template, key func(string) string, check func(string) error) (string, *runtime.Lever, error) {
	target, err := rc.Expand(t)
	if err == nil {
		err = check(target)
	}
	if err != nil {
		return "", nil, err
	}
	l, _ := rc.Lever(key(target))
	return target, l, nil
}

// leverUndo is what the rollbacks of a lever share: the lever the run
// moved, and its target (a dependency, a client, the chaos.sign step).
type leverUndo struct {
	target string
	lever  *runtime.Lever
}

func (r *leverUndo) Subject() string      { return r.lever.Subject }
func (r *leverUndo) ExpiresAt() time.Time { return r.lever.ExpiresAt() }

// LeverSubject is the item a store lever's journal record names: what
// drill recover reads the audit trail of.
func LeverSubject(l *drill.LeverRecord) string {
	if l.Kind == drill.LeverOverride {
		return breaker.OverrideKey(l.Dependency)
	}
	return ratelimit.Key(l.Client)
}
