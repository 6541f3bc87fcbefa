package levertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Flags is a lever kind of tests only, shaped as a fleet freeze is:
// flag#<name> items holding "on", set with flag.set (a put, unguarded: the
// table's policy is never asked about it) and lifted with flag.lift (a
// delete, which the policy may hold for approvals). A kind is its spec and
// its decisions; the service does the rest. Attempts is how often a
// refused set is read and decided again.
type Flags struct{ Attempts int }

// FlagSpec is Flags' spec (flag.set tried once).
var FlagSpec = Flags{}.Spec()

// Entry registers k.
func (k Flags) Entry() lever.Entry {
	return lever.Entry{Spec: k.Spec(), New: func() (lever.Kind, error) { return k, nil }}
}

// Spec implements [lever.Kind].
func (k Flags) Spec() lever.Spec {
	return lever.Spec{Name: "flag", Prefix: "flag#", Resource: "Flag", Noun: "flag", Item: "flag item", Lever: "flag", About: "A flag.",
		Actions: []lever.Action{{Name: "flag.set", Verb: "set", Unguarded: true, Attempts: k.Attempts},
			{Name: "flag.lift", Verb: "lift", Propose: &lever.Proposal{Tool: "propose_flag_lift", Title: "Propose a lift", About: "Propose lifting flags.",
				Targets: "flags", TargetsAbout: "the flags to lift",
				Params: []lever.Param{{Name: "ticket", Type: lever.ParamString, About: "the ticket, added to the reason", Required: true}}}}}}
}

// Proposed implements [lever.Proposer]: a lift of the named flags, its
// ticket added to its reason.
func (Flags) Proposed(action string, a lever.Args) (lever.Change, error) {
	if action != "flag.lift" || len(a.Targets) == 0 {
		return lever.Change{}, errors.New("only a lift of flags is proposed")
	}
	return lever.Change{Action: action, Targets: a.Targets, Reason: a.Reason + " (" + a.String("ticket") + ")"}, nil
}

// Check implements [lever.Kind]: a reason is required.
func (Flags) Check(c lever.Change) error {
	if c.Reason == "" {
		return errors.New("a reason is required")
	}
	return nil
}

// Plan implements [lever.Kind].
func (Flags) Plan(c lever.Change, t string, it store.Item, _ time.Time) (lever.Plan, error) {
	key := FlagSpec.Key(t)
	set := c.Action == "flag.set"
	p := lever.Plan{Target: t, Item: it, Result: it.Str("value"), Noop: (it != nil) == set && (!set || it.Str("value") == "on"), Image: json.RawMessage("null")}
	cond := store.IfAbsent()
	if it != nil {
		cond = store.IfEquals(store.WriteIDAttr, it.WriteID())
	}
	p.Write = func(st lever.Stamp) (store.Op, audit.Entry, any) {
		e := audit.Entry{Actor: c.Actor, Action: c.Action, Subject: key, Reason: c.Reason}
		if !set {
			return store.DeleteOp(key, cond), e, ""
		}
		return store.PutOp(store.Item{store.PK: key, "value": "on", store.WriteIDAttr: st.Token}, cond), e, "on"
	}
	return p, nil
}

// Admit implements [lever.Kind]: nothing more to refuse.
func (Flags) Admit(context.Context, lever.Change, []lever.Plan) error { return nil }

// Conflict implements [lever.Kind].
func (Flags) Conflict(t string, _ store.Item) error {
	return fmt.Errorf("flag %s changed meanwhile: %w", t, lever.ErrConflict)
}

// Encode implements [lever.Kind]: no params.
func (Flags) Encode(lever.Change) (json.RawMessage, error) { return json.RawMessage("{}"), nil }

// Params implements [lever.Kind]: no params.
func (Flags) Params(string, json.RawMessage) (any, error) { return nil, nil }

// Summary implements [lever.Kind].
func (Flags) Summary(c lever.Change) string { return c.Action }

// Bounds implements [lever.Kind]: no bound.
func (Flags) Bounds(lever.Change, time.Time) (time.Duration, bool) { return 0, false }

// Requested implements [lever.Kind]: an approval reads the flag afresh.
func (Flags) Requested(string, json.RawMessage) (store.Item, bool, error) { return nil, false, nil }

// Notice implements [lever.Kind].
func (Flags) Notice(c lever.Change, o lever.Outcome) notify.Lever {
	return notify.Lever{Subject: FlagSpec.Key(o.Target), Change: c.Action, AuditID: o.Record.ID}
}
