package kinds

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The override lever: a dependency's breaker override (breaker#DEP), moved
// by breaker.force-open and breaker.clear. This file holds all of it: the
// two kinds, their plan, the rollback a run registers, its journal record,
// and the rollback drill recover rebuilds from the audit trail; both
// rollbacks undo through [undoOverride].

var (
	_ runtime.Mutating = (*forceOpen)(nil)
	_ runtime.Mutating = (*clearOverride)(nil)
	_ runtime.Rollback = (*overrideRollback)(nil)
	_ runtime.Rollback = (*recoveredOverride)(nil)
)

// breakerForceOpenKind is the breaker.force-open step: force a dependency's
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
var breakerForceOpenKind = leverKind{stepKind{name: "breaker.force-open",
	summary: "force a dependency's breaker open fleet-wide; expires by the drill's deadline; rollback clears it",
	outputs: []string{"dependency", "expires_at", "version"}, decode: decodeForceOpen}, drill.LeverOverride}

func decodeForceOpen(d *drill.Decoder, n *yaml.Node) drill.Spec {
	f, m, ok := decodeOverrideStep(d, n, "breaker.force-open", "dependency", "for", "reason", "overwrite", "allow_unknown", "wait")
	if m == nil {
		return nil
	}
	a := &forceOpen{overrideStep: f}
	if d, ok := m.Duration("for", false); ok {
		if err := breaker.CheckOverrideDuration(d); err != nil {
			m.Errorf("for", "%v", err)
		}
		a.forDur = d
	}
	a.overwrite, _ = m.Bool("overwrite")
	if !ok {
		return nil
	}
	return a
}

// overrideStep is what breaker.force-open and breaker.clear share.
type overrideStep struct {
	dependency   drill.Template
	reason       drill.Template
	allowUnknown bool
	wait         bool
}

// decodeOverrideStep decodes the fields both override steps have; fields
// are every field the kind accepts. m is nil when n is no mapping; ok is
// false when the dependency is unusable.
func decodeOverrideStep(d *drill.Decoder, n *yaml.Node, kind string, fields ...string) (f overrideStep, m *drill.Map, ok bool) {
	if m = d.Fields(n, kind, fields...); m == nil {
		return f, nil, false
	}
	f.dependency, ok = decodeDependency(m)
	f.reason, _ = m.Template("reason", false)
	f.allowUnknown, _ = m.Bool("allow_unknown")
	f.wait, _ = m.Bool("wait")
	return f, m, ok
}

type forceOpen struct {
	overrideStep
	forDur    time.Duration
	overwrite bool
}

func (a *forceOpen) Describe(rc *runtime.RunContext) string {
	how := "until the drill's deadline"
	if a.forDur > 0 {
		how = "for " + human.Duration(a.forDur)
	}
	return fmt.Sprintf("force %s open %s", rc.Describe(a.dependency), how)
}

// Plan implements Mutating.
func (a *forceOpen) Plan(rc *runtime.RunContext) *runtime.PlanLever {
	bound, parts := rc.Drill.Timeout, []string{"the drill's deadline (" + rc.Drill.Timeout.String() + " after the start)"}
	if a.forDur > 0 {
		bound, parts = min(bound, a.forDur), append(parts, "for "+a.forDur.String())
	}
	if ov, err := overrides(rc); err == nil {
		m := ov.Durations().MaxFor()
		bound, parts = min(bound, m), append(parts, "the context's max-override "+m.String())
	}
	return &runtime.PlanLever{Subject: breaker.OverrideKey(rc.Describe(a.dependency)),
		Inverse:              "clear the drill's override (or restore an override someone else held before)",
		ExpiresWithinSeconds: drill.Seconds(bound), Expiry: "the override expires at the earliest of " + strings.Join(parts, ", "),
		Action: breaker.ActionForceOpen, Target: policyTarget(rc, a.dependency)}
}

func (a *forceOpen) Prepare(ctx context.Context, rc *runtime.RunContext) (runtime.Rollback, error) {
	// The lever's own rule on the override read: a conflict surfaces
	// before the drill starts. The force itself is decided and written
	// once, by Run.
	dep, before, moved, err := a.lever(ctx, rc)
	if err != nil || moved {
		return nil, err
	}
	err = breaker.CheckForce(breaker.ForceParams{Overwrite: a.overwrite}, before, rc.Now())
	if errors.Is(err, breaker.ErrConflict) {
		return nil, fmt.Errorf("%w: set overwrite: true to replace it for the drill (rollback restores it)", err)
	}
	if err != nil {
		return nil, err
	}
	return newOverrideRollback(rc, dep, before), nil
}

func (a *forceOpen) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	dep, reason, l, err := a.start(rc)
	if err != nil {
		return nil, err
	}
	// The one read before the write: the lever service decides on it and writes
	// conditional on it, so a change since is a conflict, never overwritten
	// unseen. The drill's own override (an earlier step's) is replaced, but
	// only that write of it.
	cur, err := readOverride(ctx, rc, dep)
	if err != nil {
		return nil, err
	}
	// Bounded after the read, as close to the write as can be: the lever
	// service checks the minimum again when it writes.
	tooShort := func(left time.Duration) error {
		return fmt.Errorf("force %s open: the drill has %s left, under the %s minimum override (the fleet would never see it)", dep, human.Duration(left), human.Duration(breaker.MinOverride))
	}
	ov, err := overrides(rc)
	if err != nil {
		return nil, err
	}
	dur, byDeadline, err := ov.Durations().Bounded(rc.Now(), rc.Deadline(), a.forDur)
	if err != nil {
		return nil, tooShort(dur)
	}
	p := breaker.ForceParams{For: dur, Overwrite: a.overwrite}
	if cur != nil && l != nil && mine(l, *cur) {
		p.SeenVersion = &cur.Version
	}
	if byDeadline {
		// The deadline itself, not Remaining() measured before the write:
		// the write stamps created_at later, and created_at + a duration
		// read earlier can land past the deadline. It rounds down to the ms.
		p.For, p.ExpiresAt = 0, rc.Deadline()
	}
	o, err := change(ctx, rc, breaker.ForceOpen(rc.Reason(reason), p, dep), cur)
	if de := (*breaker.DurationError)(nil); errors.As(err, &de) && errors.Is(err, breaker.ErrDurationTooShort) {
		return nil, tooShort(de.Duration)
	}
	if o == nil {
		return nil, err
	}
	res := breaker.ForceResultOf(*o)
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
	out := runtime.NewOutputs().Set("dependency", dep).Set("expires_at", res.After.ExpiresAt.UTC().Format(time.RFC3339Nano)).
		Set("version", strconv.FormatInt(res.After.Version, 10))
	out.Detail = fmt.Sprintf("forced open until %s", res.After.ExpiresAt.UTC().Format(time.RFC3339))
	if byDeadline {
		out.Detail += " (the drill's deadline)"
	}
	out.Detail += confirmed(o.Confirmed)
	if a.wait {
		if err := waitFleet(ctx, rc, out, metrics.Change{Dependency: dep, Goal: metrics.GoalForced, Since: res.After.CreatedAt}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// breakerClearKind is the breaker.clear step: delete a dependency's
// override, so the fleet's breakers go back to their own state.
//
//	breaker.clear:
//	  dependency: openai   # required
//	  reason: recovered
//	  allow_unknown: false
//	  wait: false          # then wait until no instance reports forced (as --wait)
//	  bake: 5m             # then watch the fleet; put the override back if it re-opens
//	  reopen_share: 0.5    # with bake: the share of instances that is "re-opened" (most)
//
// Clearing the drill's own override needs no new rollback (the force-open's
// rollback finds it gone). Clearing someone else's override registers a
// rollback that puts it back.
var breakerClearKind = leverKind{stepKind{name: "breaker.clear",
	summary: "clear a dependency's override; rollback restores an override the drill did not write",
	outputs: []string{"dependency", "cleared", "baked"}, decode: decodeClear}, drill.LeverOverride}

func decodeClear(d *drill.Decoder, n *yaml.Node) drill.Spec {
	f, m, ok := decodeOverrideStep(d, n, "breaker.clear", "dependency", "reason", "allow_unknown", "wait", "bake", "reopen_share")
	if m == nil {
		return nil
	}
	b := decodeBake(m)
	if !ok {
		return nil
	}
	return &clearOverride{f, b}
}

type clearOverride struct {
	overrideStep
	bake bakeSpec
}

func (a *clearOverride) Describe(rc *runtime.RunContext) string {
	return fmt.Sprintf("clear the override of %s%s", rc.Describe(a.dependency), a.bake.describe())
}

// Plan implements Mutating.
func (a *clearOverride) Plan(rc *runtime.RunContext) *runtime.PlanLever {
	return &runtime.PlanLever{Subject: breaker.OverrideKey(rc.Describe(a.dependency)),
		Inverse: "restore the override the drill cleared, if someone else held it (same reason, actor and expiry)",
		Expiry:  "a clear does not lapse: the rollback restores what was there",
		Action:  breaker.ActionClear, Target: policyTarget(rc, a.dependency)}
}

func (a *clearOverride) Prepare(ctx context.Context, rc *runtime.RunContext) (runtime.Rollback, error) {
	dep, cur, moved, err := a.lever(ctx, rc)
	if err != nil || moved || cur == nil || !cur.ActiveAt(rc.Now()) {
		return nil, err
	}
	return newOverrideRollback(rc, dep, cur), nil
}

func (a *clearOverride) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	dep, reason, l, err := a.start(rc)
	if err != nil {
		return nil, err
	}
	if err := a.bake.check(rc); err != nil {
		return nil, err
	}
	// An override someone else forced while the drill ran is theirs: the
	// drill clears only its own, or the one it found (and will restore),
	// and deletes it only as read here.
	read, err := readOverride(ctx, rc, dep)
	if err != nil {
		return nil, err
	}
	if cur := read; cur != nil && l != nil && cur.ActiveAt(rc.Now()) && !mine(l, *cur) && !sameOverride(l.Before, *cur) {
		return nil, fmt.Errorf("%w: it was forced during the drill; the drill clears only its own override",
			&breaker.ConflictError{Current: *cur})
	}
	o, err := change(ctx, rc, breaker.Clear(rc.Reason(reason), dep), read)
	if o == nil {
		return nil, err
	}
	if l != nil && (o.Written || errors.Is(o.Err, store.ErrOutcomeUnknown)) {
		// Deleted (or perhaps): the rollback puts back what was there
		// before the drill only while the override is still absent.
		l.SetWritten(overrideWrite{change: o.Record.Change}, rc.Now())
	}
	if err != nil {
		return nil, err
	}
	cleared := breaker.ClearResultOf(*o).Before != nil
	out := runtime.NewOutputs().Set("dependency", dep).Set("cleared", strconv.FormatBool(cleared))
	if o.Written {
		rc.Recorded(o.Record)
		out.Detail = strings.TrimPrefix(confirmed(o.Confirmed), " ")
	}
	since := rc.Now()
	if a.wait {
		if err := waitFleet(ctx, rc, out, metrics.Change{Dependency: dep, Goal: metrics.GoalReleased, Since: since}); err != nil {
			return nil, err
		}
	}
	if o.Written && cleared {
		if err := a.bake.run(ctx, rc, out, l, *o, since); err != nil {
			return nil, err
		}
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

// lever is the start of both override steps' Prepare: the store
// is needed, the dependency expanded and checked, once for the step (known
// to the context unless allowUnknown), and, unless an earlier step moved
// this lever already (moved: its rollback is that step's), its override
// read (nil: none).
func (s *overrideStep) lever(ctx context.Context, rc *runtime.RunContext) (dep string, cur *breaker.Override, moved bool, err error) {
	if _, err := overrides(rc); err != nil {
		return "", nil, false, err
	}
	dep, l, err := storeTarget(rc, s.dependency, breaker.OverrideKey, func(d string) error { return checkDependency(rc, d, s.allowUnknown) })
	if err != nil || l != nil {
		return dep, nil, l != nil, err
	}
	cur, err = readOverride(ctx, rc, dep)
	return dep, cur, false, err
}

// start is the start of both override steps' Run: the dependency Prepare
// checked, the reason the change is recorded with, and the lever (nil when
// Prepare did not run).
func (s *overrideStep) start(rc *runtime.RunContext) (dep, why string, l *runtime.Lever, err error) {
	if dep, l, err = storeTarget(rc, s.dependency, breaker.OverrideKey, breaker.ValidateDependency); err != nil {
		return "", "", nil, err
	}
	why, err = stepReason(rc, s.reason)
	return dep, why, l, err
}

// overrides is the context's override lever kind.
func overrides(rc *runtime.RunContext) (*breaker.Overrides, error) {
	return runtime.Kind[*breaker.Overrides](rc.Deps, breaker.Spec.Name)
}

// change makes c, one change of one override, decided on cur (the item
// the step read: nil when absent): [changeOne].
func change(ctx context.Context, rc *runtime.RunContext, c lever.Change, cur *breaker.Override) (*lever.Outcome, error) {
	var read store.Item
	if cur != nil {
		read = cur.Raw
	}
	return changeOne(ctx, rc, c, read)
}

// readOverride reads dep's override as stored; nil when there is none.
func readOverride(ctx context.Context, rc *runtime.RunContext, dep string) (*breaker.Override, error) {
	ov, err := overrides(rc)
	if err != nil {
		return nil, err
	}
	cur, err := ov.Get(ctx, dep)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &cur, nil
}

// overrideRollback undoes the drill's changes of a dependency's override:
// it puts back the override read before the drill's first change (or
// clears), through [breaker.Overrides.Restore], and only while the item is
// still the drill's own last write (its write_id), or still absent when
// the drill's last change deleted it. An override anyone else wrote since
// is left alone, whatever its actor or reason say.
type overrideRollback struct{ leverUndo }

// newOverrideRollback records the lever of dep, about to be moved for the
// first time, and returns its rollback; before is the override read (nil:
// none).
func newOverrideRollback(rc *runtime.RunContext, dep string, before *breaker.Override) *overrideRollback {
	return &overrideRollback{leverUndo{dep, rc.NewLever(breaker.OverrideKey(dep), before)}}
}

// overrideWrite is what an override lever's last change left: the token of
// the change (the item's and its record's write_id), and the override it
// wrote (nil when it deleted it).
type overrideWrite struct {
	change string
	after  *breaker.Override
}

func (r *overrideRollback) before() *breaker.Override {
	b, _ := r.lever.Before.(*breaker.Override)
	return b
}

func (r *overrideRollback) Describe() string {
	if b := r.before(); b != nil && b.State == breaker.OverrideStateForcedOpen {
		return fmt.Sprintf("restore the override of %s held by %s before the drill", r.target, b.Actor)
	}
	return fmt.Sprintf("clear the drill's override of %s", r.target)
}

// lastWrite returns the drill's last change of the lever l, and whether it
// made (or may have made) one.
func lastWrite(l *runtime.Lever) (overrideWrite, bool) {
	w, _ := l.Written().(overrideWrite)
	return w, l.Moved()
}

// mine reports whether cur is the drill's own last write of l.
func mine(l *runtime.Lever, cur breaker.Override) bool {
	w, moved := lastWrite(l)
	return moved && w.after != nil && w.change != "" && cur.WriteID == w.change
}

func (r *overrideRollback) Undo(ctx context.Context, rc *runtime.RunContext) (string, error) {
	return undoOverride(ctx, rc, func() (*restore, string, error) {
		w, moved := lastWrite(r.lever)
		if !moved {
			return nil, "nothing to undo: the drill did not change it", nil
		}
		cur, err := readOverride(ctx, rc, r.target)
		if err != nil {
			return nil, "", err
		}
		req := &restore{dependency: r.target, cur: cur, RestoreParams: breaker.RestoreParams{Before: r.before()}}
		if w.after != nil {
			req.Mine = w.change
		}
		return req, "", nil
	})
}

// LeverRecord implements Rollback: what drill recover needs to find the
// lever and check the journal's claims against the audit trail.
func (r *overrideRollback) LeverRecord() *drill.LeverRecord {
	rec := &drill.LeverRecord{Kind: drill.LeverOverride, Dependency: r.target, Inverse: "clear"}
	if b := r.before(); b != nil {
		rec.BeforeOverride = &drill.OverrideState{State: b.State, Reason: b.Reason, Actor: b.Actor, CreatedAt: b.CreatedAt.UTC(),
			ExpiresAt: b.ExpiresAt.UTC(), Version: b.Version}
		if b.State == breaker.OverrideStateForcedOpen {
			rec.Inverse = "restore-override"
		}
	}
	if w, _ := lastWrite(r.lever); w.change != "" {
		rec.WriteID = w.change
	}
	return rec
}

// restore is what an undo of dependency's override puts back, decided on
// cur (the override as read, nil when absent).
type restore struct {
	dependency string
	cur        *breaker.Override
	breaker.RestoreParams
}

// undoOverride is the one undo of an override, a run's rollback's and
// drill recover's: the store is needed; decide says what to restore from
// what the caller knows (nil: nothing to write, done says why); the
// restore is [breaker.Overrides.Restore] with its record staged into its
// transaction, the record named in the journal once the change committed.
func undoOverride(ctx context.Context, rc *runtime.RunContext, decide func() (*restore, string, error)) (string, error) {
	if _, err := overrides(rc); err != nil {
		return "", err
	}
	req, done, err := decide()
	if err != nil || req == nil {
		return done, err
	}
	reason := rc.Reason("rollback")
	if b := req.Before; b != nil && b.ActiveAt(rc.Now()) {
		reason = rc.Reason("rollback restores the override set by " + b.Actor)
	}
	res, o, err := breaker.Restore(ctx, rc.Levers(), req.dependency, rc.Deps.Actor, reason, req.cur, req.RestoreParams)
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
	rc.Recorded(o.Record)
	return detail + confirmed(o.Confirmed), nil
}

func recoverOverride(in RecoverInput) (runtime.Rollback, []string, error) {
	rec, l := in.Record, in.Record.Lever
	dep := l.Dependency
	subject := LeverSubject(l)
	mine := runRecords(in.Trail, in.RunID, subject, breaker.ActionForceOpen, breaker.ActionClear)
	if len(mine) == 0 {
		claim := ""
		switch {
		case l.WriteID != "":
			claim = fmt.Sprintf("the drill's last change on it was %s", l.WriteID)
		case l.BeforeOverride != nil:
			claim = fmt.Sprintf("the drill replaced or cleared an override held by %q", l.BeforeOverride.Actor)
		}
		if claim != "" && !in.StepRunning {
			return nil, []string{disagree(rec, subject, "the journal says %s, but the audit trail records no write of run %s on it", claim, in.RunID)}, nil
		}
		return unrecorded(subject, in.RunID), nil, nil
	}
	var lines []string
	if first := mine[0]; first.Actor != in.Actor {
		lines = append(lines, disagree(rec, subject, "the journal names the run's actor %q, but the audit trail records run %s's first write on it by %q", in.Actor, in.RunID, first.Actor))
	}
	if w := l.WriteID; w != "" && !slices.ContainsFunc(mine, func(r audit.Record) bool { return r.Change == w }) && !in.StepRunning {
		lines = append(lines, disagree(rec, subject, "the journal says the drill's last change on it was %s, but the audit trail records no change %s of run %s", w, w, in.RunID))
	}
	if len(lines) > 0 {
		return nil, lines, nil
	}
	var said *string
	if b := l.BeforeOverride; b != nil {
		said = &b.Actor
	}
	return &recoveredOverride{dependency: dep, trail: in.Trail, runID: in.RunID, last: mine[len(mine)-1],
		journalBefore: said, allowNoExpiry: in.AllowNoExpiry}, nil, nil
}

// recoveredOverride is an override rollback rebuilt for drill recover: what
// it does is decided at Undo from the override's item as stored and the
// audit trail of its subject.
type recoveredOverride struct {
	dependency string
	trail      []audit.Record
	runID      string
	// last is the run's last recorded change of the override.
	last audit.Record
	// journalBefore names the actor of the override the journal says was
	// there before the drill (nil: none): it only makes recover say that it
	// cannot restore it; nothing is written from it.
	journalBefore *string
	allowNoExpiry bool
}

func (r *recoveredOverride) Subject() string { return breaker.OverrideKey(r.dependency) }

func (r *recoveredOverride) Describe() string {
	return fmt.Sprintf("undo run %s's override of %s, as the audit trail records it", r.runID, r.dependency)
}

func (r *recoveredOverride) ExpiresAt() time.Time {
	if o, err := breaker.OverrideFromAuditState(r.dependency, r.last.After); err == nil && o != nil {
		return o.ExpiresAt
	}
	return time.Time{}
}

// LeverRecord is nil: the journal's record stays as it is.
func (r *recoveredOverride) LeverRecord() *drill.LeverRecord { return nil }

// change returns the audit record of the change whose token is token on the
// override, and whether that change is the run's: some record on the
// subject carries the token, and every one that does is the run's, and
// says the same. Two records of one change that differ mean one was
// planted: an error, nothing is written.
func (r *recoveredOverride) change(token string) (audit.Record, bool, error) {
	if token == "" {
		return audit.Record{}, false, nil
	}
	var found []audit.Record
	for _, rec := range r.trail {
		if rec.Subject == r.Subject() && rec.Change == token {
			found = append(found, rec)
		}
	}
	if len(found) == 0 {
		return audit.Record{}, false, nil
	}
	for _, rec := range found[1:] {
		if rec.RunID != found[0].RunID || rec.Action != found[0].Action || string(rec.Before) != string(found[0].Before) || string(rec.After) != string(found[0].After) {
			return audit.Record{}, false, fmt.Errorf("the audit trail holds %d differing records of change %s on %s: one was not written by koshactl; restore %s by hand", len(found), token, r.Subject(), r.dependency)
		}
	}
	return found[0], found[0].RunID == r.runID, nil
}

// imageBefore follows the run's changes back from rec, the run's record
// of a change: each before-image carrying the write_id of another change
// of the run is that change's own before-image. It returns the override
// before the run's first change of the chain (nil: none).
func (r *recoveredOverride) imageBefore(rec audit.Record) (*breaker.Override, error) {
	for range len(r.trail) + 1 {
		img, err := breaker.OverrideFromAuditState(r.dependency, rec.Before)
		if err != nil {
			return nil, fmt.Errorf("the audit record %s of run %s cannot be read: %w", rec.ID, r.runID, err)
		}
		if img == nil {
			return nil, nil
		}
		prev, own, err := r.change(img.WriteID)
		if err != nil {
			return nil, err
		}
		if !own || prev.Action != breaker.ActionForceOpen {
			return img, nil
		}
		rec = prev
	}
	return nil, fmt.Errorf("the audit trail of %s loops: restore it by hand", r.Subject())
}

// sameContent reports whether a holds what b held: a restore of b.
func sameContent(a, b breaker.Override) bool {
	return a.State == b.State && a.Actor == b.Actor && a.Reason == b.Reason && a.ExpiresAt.Equal(b.ExpiresAt)
}

func (r *recoveredOverride) Undo(ctx context.Context, rc *runtime.RunContext) (string, error) {
	return undoOverride(ctx, rc, func() (*restore, string, error) { return r.decide(ctx, rc) })
}

// decide is what recover writes: from the override's item as stored and
// the audit trail of its subject, never from the journal.
func (r *recoveredOverride) decide(ctx context.Context, rc *runtime.RunContext) (*restore, string, error) {
	cur, err := readOverride(ctx, rc, r.dependency)
	if err != nil {
		return nil, "", err
	}
	byHand := func(img *breaker.Override, why string) error {
		return fmt.Errorf("not restoring the override of %s held by %s before the drill: %s; restore it by hand with koshactl breaker force-open %s if it should be",
			r.dependency, img.Actor, why, r.dependency)
	}
	if cur == nil {
		// The run's last change deleted it, or someone did since: an
		// absent item proves nothing, so nothing is written from a record.
		img, err := r.imageBefore(r.last)
		if err != nil {
			return nil, "", err
		}
		if img == nil || !img.ActiveAt(rc.Now()) {
			return nil, "already clear", nil
		}
		return nil, "", byHand(img, fmt.Sprintf("the override is absent now (run %s's last change of it: audit record %s), and an absent override carries no write_id that proves nobody changed it since", r.runID, r.last.ID))
	}
	anchor, own, err := r.change(cur.WriteID)
	if err != nil {
		return nil, "", err
	}
	if !own || anchor.Action != breaker.ActionForceOpen {
		return nil, fmt.Sprintf("left alone: %s now holds it (%q, version %d), not a write the audit trail records as run %s's", cur.Actor, cur.Reason, cur.Version, r.runID), nil
	}
	img, err := r.imageBefore(anchor)
	if err != nil {
		return nil, "", err
	}
	if img == nil && r.journalBefore != nil {
		return nil, "", fmt.Errorf("the journal says an override held by %q was there before the drill, but no audit record of run %s's changes to %s names it: the drill's override is left as it is; restore by hand", *r.journalBefore, r.runID, r.dependency)
	}
	if now := rc.Now(); img != nil && img.ActiveAt(now) {
		if sameContent(*cur, *img) {
			return nil, fmt.Sprintf("already restored: it holds the override of %s from before the drill", img.Actor), nil
		}
		ov, err := overrides(rc)
		if err != nil {
			return nil, "", err
		}
		if err := breaker.CheckRestore(*img, now, ov.Durations(), r.allowNoExpiry); err != nil {
			if errors.Is(err, breaker.ErrNoExpiryUnconfirmed) {
				return nil, "", fmt.Errorf("not restoring the override of %s held by %s before the drill: %w; re-run drill recover with --yes to restore it as it was, or restore it by hand", r.dependency, img.Actor, err)
			}
			return nil, "", byHand(img, err.Error())
		}
	}
	return &restore{dependency: r.dependency, cur: cur, RestoreParams: breaker.RestoreParams{Mine: cur.WriteID, Before: img}}, "", nil
}
