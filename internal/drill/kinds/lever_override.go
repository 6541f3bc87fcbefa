package kinds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/store"
)

// overrideRollback restores a dependency's override to what it was before
// the drill: it clears the drill's own override, or puts back an override
// someone else held (that the drill replaced or cleared). An override that
// is neither the drill's nor absent (someone forced it meanwhile) is left
// alone.
type overrideRollback struct {
	dependency string
	lever      *drill.Lever
}

var (
	_ drill.Rollback = (*overrideRollback)(nil)
)

func (r *overrideRollback) Subject() string { return breaker.OverrideKey(r.dependency) }

func (r *overrideRollback) before() *breaker.Override {
	b, _ := r.lever.Before.(*breaker.Override)
	return b
}

func (r *overrideRollback) Describe() string {
	if b := r.before(); b != nil && b.State == breaker.OverrideStateForcedOpen {
		return fmt.Sprintf("restore the override of %s held by %s before the drill", r.dependency, b.Actor)
	}
	return fmt.Sprintf("clear the drill's override of %s", r.dependency)
}

func (r *overrideRollback) ExpiresAt() time.Time { return r.lever.ExpiresAt() }

// ours reports whether o was written by this run (its reason carries the
// run id), whatever happened to the write's response.
func ours(rc *drill.RunContext, o breaker.Override) bool {
	return o.Actor == rc.Actor() && strings.Contains(o.Reason, rc.RunTag())
}

func (r *overrideRollback) Undo(ctx context.Context, rc *drill.RunContext) (string, error) {
	svc := rc.Deps
	if err := drill.NeedService(svc.Overrides != nil && svc.Audit != nil, "store"); err != nil {
		return "", err
	}
	cur, err := svc.Overrides.Get(ctx, r.dependency)
	absent := errors.Is(err, store.ErrNotFound)
	if err != nil && !absent {
		return "", err
	}
	if !absent && !ours(rc, cur) {
		return fmt.Sprintf("left alone: %s now holds it (%q)", cur.Actor, cur.Reason), nil
	}
	now := rc.Now()
	if b := r.before(); b != nil && b.ActiveAt(now) {
		return restoreOverride(ctx, rc, r.dependency, r.Subject(), *b, cur, absent)
	}
	if absent {
		return "already clear", nil
	}
	res, err := clearLever(ctx, rc, r.dependency, rc.Reason("rollback"))
	if err != nil {
		return "", err
	}
	if res.Before == nil {
		return "already clear", nil
	}
	return "cleared", nil
}

// clearLever pulls the clear lever (breaker.Overrides.ClearAll) for one
// dependency, as the drill's actor.
func clearLever(ctx context.Context, rc *drill.RunContext, dep, reason string) (breaker.ClearResult, error) {
	svc := rc.Deps
	outs, err := svc.Overrides.ClearAll(ctx, rc.Audit(), breaker.ClearAll{Dependencies: []string{dep}, Reason: reason,
		Actor: func(context.Context) (string, error) { return svc.Actor, nil }})
	if len(outs) == 0 {
		return breaker.ClearResult{}, err
	}
	return outs[0].Result, err
}

func expiryText(t time.Time) string {
	if t.IsZero() {
		return "no expiry"
	}
	return "expires " + t.UTC().Format(time.RFC3339)
}

// checkDependency validates a dependency name at run time (after
// templating): its shape, and that the context knows it.
func checkDependency(rc *drill.RunContext, dep string, allowUnknown bool) error {
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

// decodeDependency reads the dependency field, checking a literal name.
func decodeDependency(m *drill.Map) (drill.Template, bool) {
	t, ok := m.Template("dependency", true)
	if !ok {
		return t, false
	}
	if s, static := t.Static(); static {
		if err := breaker.ValidateDependency(s); err != nil {
			m.Errorf("dependency", "%v", err)
			return t, false
		}
	}
	return t, true
}

// restoreOverride puts back b, the override someone held before the drill
// (a rollback, or drill recover), conditional on cur (the item just read,
// unless absent), and audits it. The one restore both paths use.
func restoreOverride(ctx context.Context, rc *drill.RunContext, dependency, subject string, b, cur breaker.Override, absent bool) (string, error) {
	svc := rc.Deps
	mine := ""
	if !absent {
		mine = cur.WriteID
	}
	res, err := svc.Overrides.Restore(ctx, rc.Audit(), breaker.RestoreRequest{Dependency: dependency, Mine: mine, Before: &b,
		Actor: svc.Actor, Reason: rc.Reason("rollback restores the override set by " + b.Actor)})
	if err != nil {
		return "", err
	}
	if l := res.LeftAlone; l != nil {
		return fmt.Sprintf("left alone: %s now holds it (%q)", l.Actor, l.Reason), nil
	}
	return fmt.Sprintf("restored the override held by %s (%s)", b.Actor, expiryText(b.ExpiresAt)), nil
}

// overrideLeverDependency is the start of both override steps' Prepare:
// the store is needed, the dependency expanded and checked (known to the
// context unless allowUnknown); moved says an earlier step already moved
// this lever, so its rollback is that step's.
func overrideLeverDependency(rc *drill.RunContext, dependency drill.Template, allowUnknown bool) (dep string, moved bool, err error) {
	svc := rc.Deps
	if err := drill.NeedService(svc.Overrides != nil && svc.Audit != nil, "store"); err != nil {
		return "", false, err
	}
	if dep, err = rc.Expand(dependency); err != nil {
		return "", false, err
	}
	if err := checkDependency(rc, dep, allowUnknown); err != nil {
		return "", false, err
	}
	_, moved = rc.Lever(breaker.OverrideKey(dep))
	return dep, moved, nil
}
