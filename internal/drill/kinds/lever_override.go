package kinds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
)

// overrideRollback undoes the drill's changes of a dependency's override:
// it puts back the override read before the drill's first change (or
// clears), through [breaker.Overrides.Restore], and only while the item is
// still the drill's own last write (its write_id), or still absent when
// the drill's last change deleted it. An override anyone else wrote since
// is left alone, whatever its actor or reason say.
type overrideRollback struct {
	dependency string
	lever      *drill.Lever
}

var (
	_ drill.Rollback = (*overrideRollback)(nil)
)

// overrideWrite is what an override lever's last change left: the token of
// the change (the item's and its record's write_id), and the override it
// wrote (nil when it deleted it).
type overrideWrite struct {
	change string
	after  *breaker.Override
}

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

// lastWrite returns the drill's last change of the lever l, and whether it
// made (or may have made) one.
func lastWrite(l *drill.Lever) (overrideWrite, bool) {
	w, _ := l.Written().(overrideWrite)
	return w, l.Moved()
}

// mine reports whether cur is the drill's own last write of l.
func mine(l *drill.Lever, cur breaker.Override) bool {
	w, moved := lastWrite(l)
	return moved && w.after != nil && w.change != "" && cur.WriteID == w.change
}

func (r *overrideRollback) Undo(ctx context.Context, rc *drill.RunContext) (string, error) {
	svc := rc.Deps
	if err := drill.NeedService(svc.Overrides != nil && svc.Audit != nil, "store"); err != nil {
		return "", err
	}
	w, moved := lastWrite(r.lever)
	if !moved {
		return "nothing to undo: the drill did not change it", nil
	}
	req := breaker.RestoreRequest{Dependency: r.dependency, Before: r.before(), Actor: svc.Actor, Reason: rc.Reason("rollback")}
	if w.after != nil {
		req.Mine = w.change
	}
	return restore(ctx, rc, req)
}

// restore is the one restore of an override both a rollback and drill
// recover make: [breaker.Overrides.Restore], its record staged into its
// transaction, the record named in the journal once the change committed.
func restore(ctx context.Context, rc *drill.RunContext, req breaker.RestoreRequest) (string, error) {
	if b := req.Before; b != nil && b.ActiveAt(rc.Now()) {
		req.Reason = rc.Reason("rollback restores the override set by " + b.Actor)
	}
	res, err := rc.Deps.Overrides.Restore(ctx, rc.Audit(), req)
	if err != nil {
		return "", err
	}
	var detail string
	switch {
	case res.LeftAlone != nil:
		l := res.LeftAlone
		return fmt.Sprintf("left alone: %s now holds it (%q), not the drill's own write", l.Actor, l.Reason), nil
	case res.Restored != nil:
		detail = fmt.Sprintf("restored the override held by %s (%s)", res.Restored.Actor, expiryText(res.Restored.ExpiresAt))
	case res.Cleared:
		detail = "cleared"
	default:
		return "already clear", nil
	}
	rc.Recorded(res.Record)
	return detail + confirmed(res.Confirmed), nil
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
