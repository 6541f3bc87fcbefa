package breaker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The override lever as a kind of [lever.Kind]: what a force, a clear and a
// drill's restore do to a dependency's override, decided by the rules of
// this package. The lever service (internal/lever) reads, writes and
// records; [Overrides] decides.

// ActionRestore is a drill's rollback of its own change of an override
// ([RestoreParams]): never asked of the policy nor requested; recorded as
// the force or clear it writes.
const ActionRestore = "breaker.restore"

// Spec is the override lever's spec.
var Spec = lever.Spec{Name: "breaker", Prefix: OverridePrefix, Resource: "Dependency", Noun: "dependency", Item: "override", Lever: "breaker override",
	About: "A dependency whose breaker a lever forces or clears.", Inspect: "koshactl breaker get",
	Actions: []lever.Action{
		{Name: ActionForceOpen, Verb: "force open", DryRunActor: true, Propose: &lever.Proposal{Tool: "propose_force_open", Title: "Propose a force-open",
			About:   "Propose forcing dependencies' breakers open fleet-wide. Nothing is forced: a change request is made (whatever the table's policy says) and announced; a person applies it with the approve command in the result.",
			Targets: "dependencies", TargetsAbout: "the dependencies to force open, as breaker status names them",
			Params: []lever.Param{
				{Name: "for", Type: lever.ParamString, About: "how long the override lasts once approved, a Go duration like 30m (default 1h, within the context's max-override)"},
				{Name: "overwrite", Type: lever.ParamBool, About: "replace an active override (otherwise one is a conflict)"},
			}}},
		{Name: ActionClear, Verb: "clear", Propose: &lever.Proposal{Tool: "propose_clear", Title: "Propose a clear",
			About:   "Propose clearing dependencies' overrides. Nothing is cleared: a change request is made and announced; a person applies it with the approve command in the result.",
			Targets: "dependencies", TargetsAbout: "the dependencies whose override to clear"}},
		{Name: ActionRestore, Verb: "restore", Internal: true},
		{Name: ActionRollback, Verb: "put back"},
	}}

var (
	_ lever.Kind     = (*Overrides)(nil)
	_ lever.Proposer = (*Overrides)(nil)
	_ lever.Forcing  = (*Overrides)(nil)
)

// Spec implements [lever.Kind].
func (s *Overrides) Spec() lever.Spec { return Spec }

// ForceParams are a force's params: how long the override lasts (For, an
// expiry, or none when NoExpiry confirms it), whether it replaces an active
// override (Overwrite, or the one the caller saw: SeenVersion), and, for a
// levers file's window, its marker (ManagedBy) and the planned window's
// rule (Planned: an expiry ahead, within the context's max-override; the
// minimum does not apply to what is left of a window).
type ForceParams struct {
	// For, when positive, sets the expiry to the write's created_at + For.
	For time.Duration
	// ExpiresAt is when the override lapses when For is zero.
	ExpiresAt time.Time
	NoExpiry  bool
	Overwrite bool
	// SeenVersion is the version of the active override the caller saw
	// and agreed to replace (the dashboard's prompt): that one is
	// replaced without Overwrite; another is a conflict with Raced set.
	SeenVersion *int64
	ManagedBy   string
	Planned     bool
}

// forceWire is a force's params as a change request holds them
// (docs/contracts/policy.md): whole seconds, an RFC 3339 expiry.
type forceWire struct {
	ForSeconds int64  `json:"for_seconds,omitempty"`
	Until      string `json:"until,omitempty"`
	NoExpiry   bool   `json:"no_expiry,omitempty"`
	Overwrite  bool   `json:"overwrite,omitempty"`
}

// Encode implements [lever.Kind]: a force's params as a request holds
// them (replacing the override seen is an overwrite); a clear has none.
func (s *Overrides) Encode(c lever.Change) (json.RawMessage, error) {
	if c.Action == ActionRollback {
		return nil, ErrNotRequestable
	}
	if c.Action != ActionForceOpen {
		return json.RawMessage("{}"), nil
	}
	p := forceParams(c)
	w := forceWire{NoExpiry: p.NoExpiry, Overwrite: p.Overwrite || p.SeenVersion != nil}
	switch {
	case p.NoExpiry:
	case p.For > 0:
		w.ForSeconds = int64(p.For / time.Second)
	case !p.ExpiresAt.IsZero():
		w.Until = lever.WireTime(p.ExpiresAt)
	}
	return json.Marshal(w)
}

// Params implements [lever.Kind]: a force's params as a request holds them.
func (s *Overrides) Params(action string, raw json.RawMessage) (any, error) {
	if action == ActionRollback {
		return nil, ErrNotRequestable
	}
	if action != ActionForceOpen {
		return nil, lever.NoParams(action, raw)
	}
	var w forceWire
	if err := lever.DecodeParams(raw, &w); err != nil {
		return nil, err
	}
	p := ForceParams{For: time.Duration(w.ForSeconds) * time.Second, NoExpiry: w.NoExpiry, Overwrite: w.Overwrite}
	if w.Until != "" {
		t, err := lever.ParseWireTime("until", w.Until)
		if err != nil {
			return nil, err
		}
		p.ExpiresAt = t
	}
	return p, nil
}

func forceParams(c lever.Change) ForceParams {
	p, _ := c.Params.(ForceParams)
	return p
}

// RestoreParams are a restore's: what to put back, and the caller's own
// write it replaces.
type RestoreParams struct {
	// Mine is the write_id the caller's own change left on the override
	// ("" when that change deleted it). The restore holds only while the
	// stored item still carries it (or, for "", while it is still absent):
	// an override anyone else wrote since is left alone, whatever a
	// journal or a record says.
	Mine string
	// Before is what to put back: an override in force at the restore is
	// written again (its reason, actor and expiry); nil, or one no longer
	// in force, clears.
	Before *Override
}

// RestoreResult says what a restore did.
type RestoreResult struct {
	// Restored is the override put back (nil when none was).
	Restored *Override
	// Cleared is true when the caller's override was deleted.
	Cleared bool
	// LeftAlone is the override someone else wrote since the caller's
	// change: nothing was written.
	LeftAlone *Override
}

// Check implements [lever.Kind]: the names, the reason and a force's
// lifetime, before anything is read.
func (s *Overrides) Check(c lever.Change) error {
	switch c.Action {
	case ActionForceOpen:
		if err := CheckDependencies(c.Targets, c.Known); err != nil {
			return err
		}
		if err := CheckForceReason(c.Reason); err != nil {
			return err
		}
		p := forceParams(c)
		err := s.checkLifetime(p, s.clock.Now())
		if p.Planned {
			err = s.checkPlanned(p)
		}
		if errors.Is(err, ErrDurationTooLong) {
			return &lever.SettingError{Where: "approve it from a context whose max-override allows it", Err: err}
		}
		return err
	case ActionClear:
		for _, t := range c.Targets {
			if t == "" {
				return fmt.Errorf("%w: %q: an override's key is %s<dependency>, as breaker list names it", ErrInvalidKey, OverrideKey(t), OverridePrefix)
			}
		}
		return audit.ValidateReason(c.Reason)
	case ActionRollback:
		if err := CheckDependencies(c.Targets, nil); err != nil {
			return err
		}
		return audit.ValidateReason(c.Reason)
	}
	return CheckDependencies(c.Targets, nil)
}

// Plan implements [lever.Kind].
func (s *Overrides) Plan(c lever.Change, dep string, it store.Item, now time.Time) (lever.Plan, error) {
	before, err := lever.Decode(it, OverrideFromItem)
	if err != nil {
		return lever.Plan{}, err
	}
	p := lever.Plan{Target: dep, Item: it, Image: lever.Image(AuditState(before))}
	key := OverrideKey(dep)
	switch c.Action {
	case ActionForceOpen:
		res, err := decideForce(dep, c.Reason, c.Actor, forceParams(c), before, now)
		if err != nil {
			return p, err
		}
		p.Result = res
		p.Write = func(st lever.Stamp) (store.Op, audit.Entry, any) {
			res.After.WriteID = st.Token
			return put(res.After, before, st.Approval), audit.Entry{Actor: res.After.Actor, Action: ActionForceOpen, Subject: key,
				Reason: res.After.Reason, Before: AuditState(before), After: AuditState(&res.After)}, res
		}
	case ActionClear:
		res := ClearResult{Before: before, WasActive: before != nil && before.ActiveAt(now)}
		p.Result, p.Noop = res, before == nil
		p.Write = func(lever.Stamp) (store.Op, audit.Entry, any) {
			return store.DeleteOp(key, before.condition()), audit.Entry{Actor: c.Actor, Action: ActionClear, Subject: key, Reason: c.Reason,
				Before: AuditState(before)}, res
		}
	case ActionRollback:
		return planRollback(c, dep, before, now, p), nil
	case ActionRestore:
		rp, _ := c.Params.(RestoreParams)
		p.Result, p.Noop = RestoreResult{}, true
		if before != nil && (rp.Mine == "" || before.WriteID != rp.Mine) {
			p.Result = RestoreResult{LeftAlone: before}
			return p, nil
		}
		switch b := rp.Before; {
		case b != nil && b.ActiveAt(now):
			after := Override{Dependency: dep, State: OverrideStateForcedOpen, Reason: b.Reason, Actor: b.Actor, ExpiresAt: b.ExpiresAt, Version: 1,
				CreatedAt: now.UTC().Truncate(time.Millisecond)}
			if before != nil {
				after.Version = before.nextVersion()
			}
			p.Result, p.Noop = RestoreResult{Restored: &after}, false
			p.Write = func(st lever.Stamp) (store.Op, audit.Entry, any) {
				after.WriteID = st.Token
				return put(after, before, st.Approval), audit.Entry{Actor: c.Actor, Action: ActionForceOpen, Subject: key, Reason: c.Reason,
					Before: AuditState(before), After: AuditState(&after)}, RestoreResult{Restored: &after}
			}
		case before != nil:
			p.Result, p.Noop = RestoreResult{Cleared: true}, false
			p.Write = func(lever.Stamp) (store.Op, audit.Entry, any) {
				return store.DeleteOp(key, before.condition()), audit.Entry{Actor: c.Actor, Action: ActionClear, Subject: key, Reason: c.Reason,
					Before: AuditState(before)}, RestoreResult{Cleared: true}
			}
		}
	default:
		return p, fmt.Errorf("%w for %q", lever.ErrUnknownKind, c.Action)
	}
	return p, nil
}

// put is the conditional write of after over before (nil: absent), with
// how the table's policy let it through on the item itself.
func put(after Override, before *Override, approval *audit.Approval) store.Op {
	it := after.Item()
	lever.SetApproval(it, attrApproval, approval)
	cond := store.IfAbsent()
	if before != nil {
		cond = before.condition()
	}
	return store.PutOp(it, cond)
}

// Admit implements [lever.Kind]: a clear of a name the context does not
// know and that has no override is refused (a typo like open-ai would
// otherwise clear nothing while openai stays forced); an unknown name
// whose override is stored names an item that exists, and is cleared.
func (s *Overrides) Admit(_ context.Context, c lever.Change, plans []lever.Plan) error {
	if c.Action != ActionClear || c.Known == nil {
		return nil
	}
	for _, p := range plans {
		if p.Item == nil {
			if err := CheckKnownDependency(p.Target, c.Known); err != nil {
				return err
			}
		}
	}
	return nil
}

// Conflict implements [lever.Kind]: the override as stored when a write
// of it was refused.
func (s *Overrides) Conflict(dep string, cur store.Item) error {
	if cur == nil {
		return fmt.Errorf("override %s changed while koshactl was acting (it is gone now): review it, then re-run: %w", dep, ErrConflict)
	}
	o, err := OverrideFromItem(cur)
	if err != nil {
		return err
	}
	return &ConflictError{Current: o, Raced: true}
}

// Summary implements [lever.Kind]: "force open openai, core-api for 30m",
// "clear openai".
func (s *Overrides) Summary(c lever.Change) string {
	a, _ := Spec.Action(c.Action)
	verb := a.Verb
	if verb == "" {
		verb = c.Action
	}
	out := verb + " " + strings.Join(c.Targets, ", ")
	if c.Action != ActionForceOpen {
		return out
	}
	p := forceParams(c)
	switch {
	case p.NoExpiry:
		out += " (never expires)"
	case p.For >= time.Second:
		out += " for " + human.Duration(p.For.Truncate(time.Second))
	case !p.ExpiresAt.IsZero():
		out += " until " + lever.WireTime(p.ExpiresAt)
	}
	if p.Overwrite || p.SeenVersion != nil {
		out += ", replacing an active override"
	}
	return out
}

// Bounds implements [lever.Kind]: how long a force lasts, as the policy
// judges it.
func (s *Overrides) Bounds(c lever.Change, now time.Time) (time.Duration, bool) {
	if c.Action == ActionRollback {
		b := rollbackParams(c).Before
		return max(b.ExpiresAt.Sub(now), 0), !b.Expires()
	}
	if c.Action != ActionForceOpen {
		return 0, false
	}
	p := forceParams(c)
	switch {
	case p.NoExpiry:
		return 0, true
	case p.For > 0:
		return p.For.Truncate(time.Second), false
	case p.ExpiresAt.After(now):
		return p.ExpiresAt.Sub(now), false
	}
	return 0, false
}

// Requested implements [lever.Kind]: an approved force or clear is
// conditional on the override as the requester read it.
func (s *Overrides) Requested(dep string, doc json.RawMessage) (store.Item, bool, error) {
	if string(doc) == "null" {
		doc = nil // absent when requested
	}
	o, err := OverrideFromAuditState(dep, doc)
	if err != nil || o == nil {
		return nil, true, err
	}
	return o.Raw, true, nil
}

// Notice implements [lever.Kind]: "forced open (replaced an override set
// by alice)", "cleared (was forced open by bob)".
func (s *Overrides) Notice(_ lever.Change, o lever.Outcome) notify.Lever {
	l := notify.Lever{Subject: OverrideKey(o.Target), AuditID: o.Record.ID}
	switch r := o.Result.(type) {
	case ForceResult:
		l.Change = "forced open"
		if r.Replaced && r.Before != nil {
			l.Change = "forced open (replaced an override set by " + r.Before.Actor + ")"
		}
		if !r.After.Expires() {
			l.Change += ", never expires"
		}
		l.ExpiresAt = notify.Time(r.After.ExpiresAt)
	case ClearResult:
		l.Change = "cleared"
		if r.Before != nil {
			l.Change = "cleared (was forced open by " + r.Before.Actor + ")"
		}
	case RollbackResult:
		l.Change = "put back (rolled back a clear that did not hold)"
		if r.Restored != nil {
			l.ExpiresAt = notify.Time(r.Restored.ExpiresAt)
		}
	case RestoreResult:
		l.Change = "restored"
		if r.Cleared {
			l.Change = "cleared"
		}
	}
	return l
}

// Forces implements [lever.Forcing]: a force forces its targets open for
// as long as [Overrides.Bounds] says (0: never expires), and a bake's
// put-back for what is left of the override it restores; a clear clears
// them. A drill's restore says neither: what it writes is decided from
// the item as read.
func (s *Overrides) Forces(c lever.Change, now time.Time) (lever.Forces, bool) {
	switch c.Action {
	case ActionForceOpen:
		d, _ := s.Bounds(c, now)
		return lever.Forces{Dependencies: c.Targets, For: d}, true
	case ActionClear:
		return lever.Forces{Dependencies: c.Targets, Clear: true}, true
	case ActionRollback:
		// A bake's put-back forces the dependency open again, for what is
		// left of the override it restores.
		d, _ := s.Bounds(c, now)
		return lever.Forces{Dependencies: c.Targets, For: d}, true
	}
	return lever.Forces{}, false
}
