package freeze

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// The freeze lever as a kind of [lever.Kind]: what setting and lifting the
// fleet's freeze do to freeze#fleet, decided by the rules of this package.
// The lever service (internal/lever) reads, writes, records and announces;
// [Lever] decides.

// The freeze's actions. A set is never held for approvals (a safety lever
// fails toward safety); a lift is what the table's policy can require
// approvals for (docs/policies/four-eyes.cedar does).
const (
	ActionSet  = "freeze.set"
	ActionLift = "freeze.lift"
)

// Target is the freeze's one target: the fleet (its item is [Key]).
const Target = "fleet"

// setAttempts bounds how often a set refused by the item's condition (an
// operator freezing at the same time) is read and decided again: each
// attempt extends the freeze it finds, so both are recorded.
const setAttempts = 3

// Spec is the freeze lever's spec.
var Spec = lever.Spec{Name: "freeze", Prefix: Prefix, Resource: "Fleet", Noun: "fleet", Item: "freeze item", Lever: "fleet freeze",
	About: "The fleet: a freeze stops every chaos fault and every planned change on it.", Inspect: "koshactl freeze status",
	Actions: []lever.Action{
		{Name: ActionSet, Verb: "freeze", Unguarded: true, Attempts: setAttempts, DryRunActor: true},
		{Name: ActionLift, Verb: "lift the freeze of"},
	}}

// DefaultFor is how long a freeze lasts when its writer names no end: an
// hour (or the context's max-override when shorter). A freeze stops drills,
// planned windows and chaos for everyone; one nobody remembers to lift
// must end on its own within an incident's first hour, and freezing again
// extends it in one command.
const DefaultFor = time.Hour

// MinFor is the shortest freeze: the data plane's cache period. A shorter
// one could end before an instance reads it.
const MinFor = CacheTTL

// ErrBadDuration reports a freeze's requested end outside its bounds (too
// short, past, or longer than the context's max-override): exit 2.
var ErrBadDuration = exitcode.New(exitcode.Usage, "freeze duration out of bounds")

// ErrReasonRequired refuses a freeze or a lift without a reason: everyone
// the freeze stops reads why.
var ErrReasonRequired = exitcode.New(exitcode.Usage, "a reason is required: say why, everyone the freeze stops reads it")

// SetParams are a set's params: how long it lasts (For from the write, or
// Until; neither: [DefaultFor]) and the incident's reference.
type SetParams struct {
	For   time.Duration
	Until time.Time
	Ref   string
}

// Result is what a change did to the freeze item.
type Result struct {
	// Before is the freeze as read (nil: none); After as written (nil: a
	// lift of nothing).
	Before, After *Freeze
	// Extended is true when a set found a freeze holding: it replaced it
	// (both are recorded), never ending earlier than the one it found.
	Extended bool
	// KeptEnd is true when the freeze found ended later than asked: its
	// end was kept.
	KeptEnd bool
	// NotFrozen is true for a lift when no freeze held: nothing written.
	NotFrozen bool
}

// ResultOf is a freeze change's result in an outcome.
func ResultOf(o lever.Outcome) Result {
	r, _ := o.Result.(Result)
	return r
}

// DefaultMaxFor bounds a freeze when the kind is built with no
// max-override: the context's default (config.DefaultMaxOverride, held
// equal by TestNoMaxOverrideIsTheContextsDefault), as the breaker kind's
// is.
const DefaultMaxFor = 24 * time.Hour

// Lever is the freeze kind of a context: its max-override bounds a freeze.
type Lever struct {
	clock clock.Clock
	max   time.Duration
}

var _ lever.Kind = (*Lever)(nil)

// NewLever returns the freeze kind whose freezes last at most maxFor (the
// context's max-override; zero or less: [DefaultMaxFor]). A nil clk is the
// wall clock.
func NewLever(clk clock.Clock, maxFor time.Duration) *Lever {
	if clk == nil {
		clk = clock.Real{}
	}
	if maxFor <= 0 {
		maxFor = DefaultMaxFor
	}
	return &Lever{clock: clk, max: maxFor}
}

// Set is the change freezing the fleet for reason, as p says.
func Set(reason string, p SetParams) lever.Change {
	return lever.Change{Action: ActionSet, Targets: []string{Target}, Reason: reason, Params: p}
}

// Lift is the change lifting the fleet's freeze, for reason.
func Lift(reason string) lever.Change {
	return lever.Change{Action: ActionLift, Targets: []string{Target}, Reason: reason}
}

// Spec implements [lever.Kind].
func (l *Lever) Spec() lever.Spec { return Spec }

func setParams(c lever.Change) SetParams {
	p, _ := c.Params.(SetParams)
	return p
}

// End is when a freeze set at now with p ends by itself: now + For, Until,
// or now + [DefaultFor] (the max-override when shorter). It refuses an end
// under [MinFor] away or past the max-override, naming the fix.
func (l *Lever) End(p SetParams, now time.Time) (time.Time, error) {
	switch {
	case p.For < 0:
		return time.Time{}, fmt.Errorf("%w: %s is not positive: freeze for a duration like 30m", ErrBadDuration, human.Duration(p.For))
	case p.For > 0 && !p.Until.IsZero():
		return time.Time{}, fmt.Errorf("%w: a freeze ends after a duration or at an instant, not both", ErrBadDuration)
	}
	d := p.For
	switch {
	case !p.Until.IsZero():
		d = p.Until.Sub(now)
		if d < MinFor {
			return time.Time{}, fmt.Errorf("%w: %s is less than %s away: the fleet would not see the freeze; give a later end", ErrBadDuration,
				p.Until.UTC().Format(time.RFC3339), human.Duration(MinFor))
		}
	case d == 0:
		d = min(DefaultFor, l.max)
	case d < MinFor:
		return time.Time{}, fmt.Errorf("%w: %s is shorter than %s, the fleet's cache period: the fleet might never see it; freeze for longer", ErrBadDuration,
			human.Duration(d), human.Duration(MinFor))
	}
	if d > l.max {
		return time.Time{}, fmt.Errorf("%w: %s is longer than the context's max-override (%s): freeze for at most %s, and freeze again before it ends to extend it",
			ErrBadDuration, human.Duration(d.Truncate(time.Second)), human.Duration(l.max), human.Duration(l.max))
	}
	return now.Add(d), nil
}

// CheckReason is a freeze's or a lift's reason rule: required, one line.
func CheckReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return ErrReasonRequired
	}
	return audit.ValidateReason(reason)
}

// Check implements [lever.Kind]: the one target, the reason, a set's
// reference and end, before anything is read.
func (l *Lever) Check(c lever.Change) error {
	if len(c.Targets) != 1 || c.Targets[0] != Target {
		return exitcode.Errorf(exitcode.Usage, "a freeze has one target, %q: %s", Target, textsafe.Quote(strings.Join(c.Targets, " ")))
	}
	if err := CheckReason(c.Reason); err != nil {
		return err
	}
	if c.Action != ActionSet {
		return nil
	}
	p := setParams(c)
	if p.Ref != "" {
		if err := ValidateRef(p.Ref); err != nil {
			return err
		}
	}
	_, err := l.End(p, l.clock.Now())
	return err
}

// Plan implements [lever.Kind]. A set writes a new freeze; over one that
// holds it extends it: the new writer's freeze (the reference kept when
// it names none), ending no earlier than the one it replaces (a set never shortens a freeze: ending one is a lift,
// which the table's policy may hold). A lift of a freeze that holds writes
// its end; of none, nothing.
func (l *Lever) Plan(c lever.Change, target string, it store.Item, now time.Time) (lever.Plan, error) {
	now = now.UTC().Truncate(time.Millisecond)
	before, err := lever.Decode(it, FromItem)
	if err != nil {
		return lever.Plan{}, err
	}
	p := lever.Plan{Target: target, Item: it, Image: lever.Image(it)}
	res := Result{Before: before}
	var after Freeze
	switch c.Action {
	case ActionSet:
		sp := setParams(c)
		end, err := l.End(sp, now)
		if err != nil {
			return p, err
		}
		after = Freeze{Actor: c.Actor, Reason: strings.TrimSpace(c.Reason), Ref: sp.Ref, SetAt: now, ExpiresAt: end.UTC().Truncate(time.Millisecond), Version: 1}
		if before != nil && before.FrozenAt(now) {
			res.Extended = true
			if after.Ref == "" {
				after.Ref = before.Ref // still that incident's, unless said otherwise
			}
			if e, ok := before.End(); !ok || e.After(after.ExpiresAt) {
				after.ExpiresAt, res.KeptEnd = e, true // zero when it had none: it holds until lifted
			}
		}
	case ActionLift:
		if before == nil || !before.FrozenAt(now) {
			res.NotFrozen = true
			p.Result, p.Noop = res, true
			return p, nil
		}
		after = *before
		after.LiftedAt, after.LiftedBy, after.LiftReason = now, c.Actor, strings.TrimSpace(c.Reason)
	default:
		return p, fmt.Errorf("%w for %q", lever.ErrUnknownKind, c.Action)
	}
	after.Raw, after.Problems, after.Approval = nil, nil, nil
	if before != nil {
		after.Version = before.NextVersion()
	}
	res.After = &after
	p.Result = res
	p.Write = func(st lever.Stamp) (store.Op, audit.Entry, any) {
		a := after
		a.WriteID, a.Approval = st.Token, st.Approval
		item := a.Item()
		lever.SetApproval(item, AttrApproval, st.Approval)
		a.Raw = item
		cond := store.IfAbsent()
		var was any
		if before != nil {
			cond, was = before.Condition(), before.Raw
		}
		r := res
		r.After = &a
		return store.PutOp(item, cond), audit.Entry{Actor: c.Actor, Action: c.Action, Subject: Key, Reason: strings.TrimSpace(c.Reason),
			Before: was, After: item}, r
	}
	return p, nil
}

// Admit implements [lever.Kind]: nothing more to refuse.
func (l *Lever) Admit(context.Context, lever.Change, []lever.Plan) error { return nil }

// Conflict implements [lever.Kind]: the freeze as stored when a write of
// it was refused (a set tries again first: see [Spec]).
func (l *Lever) Conflict(_ string, cur store.Item) error {
	if cur == nil {
		return fmt.Errorf("the fleet's freeze item changed while koshactl was acting (it is gone now): review it with koshactl freeze status, then re-run: %w",
			lever.ErrConflict)
	}
	f, err := FromItem(cur)
	if err != nil {
		return err
	}
	return fmt.Errorf("the fleet's freeze changed while koshactl was acting (%s): review it with koshactl freeze status, then re-run: %w",
		f.Describe(l.clock.Now()), lever.ErrConflict)
}

// setWire is a set's params as a change request holds them.
type setWire struct {
	ForSeconds int64  `json:"for_seconds,omitempty"`
	Until      string `json:"until,omitempty"`
	Ref        string `json:"ref,omitempty"`
}

// Encode implements [lever.Kind]: a set's params (never requested: it is
// unguarded, but a dry run's document shows them); a lift has none.
func (l *Lever) Encode(c lever.Change) (json.RawMessage, error) {
	if c.Action != ActionSet {
		return json.RawMessage("{}"), nil
	}
	p := setParams(c)
	w := setWire{ForSeconds: int64(p.For / time.Second), Ref: p.Ref}
	if !p.Until.IsZero() {
		w.Until = lever.WireTime(p.Until)
	}
	return json.Marshal(w)
}

// Params implements [lever.Kind].
func (l *Lever) Params(action string, raw json.RawMessage) (any, error) {
	if action != ActionSet {
		return nil, lever.NoParams(action, raw)
	}
	var w setWire
	if err := lever.DecodeParams(raw, &w); err != nil {
		return nil, err
	}
	p := SetParams{For: time.Duration(w.ForSeconds) * time.Second, Ref: w.Ref}
	if w.Until != "" {
		t, err := lever.ParseWireTime("until", w.Until)
		if err != nil {
			return nil, err
		}
		p.Until = t
	}
	return p, nil
}

// Summary implements [lever.Kind]: "freeze the fleet for 30m (INC-1)",
// "lift the fleet's freeze".
func (l *Lever) Summary(c lever.Change) string {
	if c.Action != ActionSet {
		return "lift the fleet's freeze"
	}
	p := setParams(c)
	out := "freeze the fleet"
	switch {
	case p.For > 0:
		out += " for " + human.Duration(p.For.Truncate(time.Second))
	case !p.Until.IsZero():
		out += " until " + p.Until.UTC().Format(time.RFC3339)
	default:
		out += " for " + human.Duration(min(DefaultFor, l.max))
	}
	if p.Ref != "" {
		out += " (" + p.Ref + ")"
	}
	return out
}

// Bounds implements [lever.Kind]: how long a set lasts; a lift has no
// bound.
func (l *Lever) Bounds(c lever.Change, now time.Time) (time.Duration, bool) {
	if c.Action != ActionSet {
		return 0, false
	}
	end, err := l.End(setParams(c), now)
	if err != nil {
		return 0, false
	}
	return end.Sub(now), false
}

// Requested implements [lever.Kind]: an approved lift reads the item
// afresh, and lifts the freeze that holds when it is approved (a lift
// ends the fleet's freeze, whichever it is; none holding, it writes
// nothing).
func (l *Lever) Requested(string, json.RawMessage) (store.Item, bool, error) { return nil, false, nil }

// Notice implements [lever.Kind]: "frozen until …", "frozen until …,
// extending the freeze by alice (INC-1)", "freeze lifted (set by alice,
// INC-1)".
func (l *Lever) Notice(_ lever.Change, o lever.Outcome) notify.Lever {
	r := ResultOf(o)
	n := notify.Lever{Subject: Key, AuditID: o.Record.ID}
	if r.After == nil {
		return n
	}
	a, b := r.After, r.Before
	switch {
	case !a.LiftedAt.IsZero():
		n.Change = "freeze lifted"
		if b != nil {
			n.Change += " (set by " + b.Actor + refSuffix(b.Ref) + ")"
		}
	default:
		n.Change = "frozen until lifted"
		if !a.ExpiresAt.IsZero() {
			n.Change = "frozen until " + a.ExpiresAt.UTC().Format(time.RFC3339)
		}
		if a.Ref != "" {
			n.Change += " (" + a.Ref + ")"
		}
		if r.Extended && b != nil {
			n.Change += ", extending the freeze by " + b.Actor + refSuffix(b.Ref)
		}
		n.ExpiresAt = notify.Time(a.ExpiresAt)
	}
	return n
}

func refSuffix(ref string) string {
	if ref == "" {
		return ""
	}
	return ", " + ref
}

// Held is the rule of the control plane's planned change (a drill, a
// levers file's window) at now, given the fleet's freeze (nil: none): a
// *[FrozenError] naming the freeze and what it holds (what: "no drill
// starts"), or nil when the fleet is not frozen.
func Held(f *Freeze, now time.Time, what string) error {
	if f == nil || !f.FrozenAt(now) {
		return nil
	}
	return &FrozenError{Freeze: *f, Now: now, What: what}
}
