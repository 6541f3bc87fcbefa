package breaker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// ActionRollback is a bake's put-back of the override a clear removed
// ([PutBack]): the table's policy is asked about it as this action (a
// policy may let the one who cleared put it back without approvals, as
// docs/policies/four-eyes.cedar does), and it is recorded as the
// breaker.force-open it writes, with rollback_of naming the clear's record.
const ActionRollback = "breaker.rollback"

// ErrNotRequestable refuses to make a rollback a change request: it puts
// back what one clear removed, now or never, so it is never held for
// approvals (a policy that would hold it refuses it: exit 7).
var ErrNotRequestable = exitcode.New(exitcode.Refused,
	"refused: the table's policy holds breaker.rollback for approvals, and a bake's put-back is never a change request (permit it for the clear's actor, context.own_rollback, as four-eyes.cedar does)")

// RollbackParams are a rollback's: the clear it rolls back and the override
// that clear removed.
type RollbackParams struct {
	// Of is the clear's audit record.
	Of audit.Record
	// Before is the override the clear removed: put back with its reason,
	// actor and expiry (what is left of it).
	Before Override
}

// RollbackResult says what a rollback did.
type RollbackResult struct {
	// Restored is the override put back (nil when none was).
	Restored *Override
	// Expired is true when the override's expiry had passed: it would have
	// lapsed anyway, so nothing was put back.
	Expired bool
	// LeftAlone is the override someone wrote since the clear: nothing was
	// overwritten.
	LeftAlone *Override
}

func rollbackParams(c lever.Change) RollbackParams {
	p, _ := c.Params.(RollbackParams)
	return p
}

// planRollback decides a rollback of dep, whose item is before (nil:
// absent) at now: put back only while the item is as the clear left it
// (absent), and only an override still in force.
func planRollback(c lever.Change, dep string, before *Override, now time.Time, p lever.Plan) lever.Plan {
	rp := rollbackParams(c)
	p.Noop = true
	switch b := rp.Before; {
	case before != nil:
		p.Result = RollbackResult{LeftAlone: before}
		return p
	case !b.ActiveAt(now):
		p.Result = RollbackResult{Expired: true}
		return p
	}
	b := rp.Before
	after := Override{Dependency: dep, State: OverrideStateForcedOpen, Reason: b.Reason, Actor: b.Actor, ExpiresAt: b.ExpiresAt, Version: 1,
		CreatedAt: now.UTC().Truncate(time.Millisecond)}
	p.Result, p.Noop = RollbackResult{Restored: &after}, false
	p.Write = func(st lever.Stamp) (store.Op, audit.Entry, any) {
		after.WriteID = st.Token
		return put(after, nil, st.Approval), audit.Entry{Actor: c.Actor, Action: ActionForceOpen, Subject: OverrideKey(dep), Reason: c.Reason,
			RollbackOf: rp.Of.ID, After: AuditState(&after)}, RollbackResult{Restored: &after}
	}
	return p
}

// PutBack rolls back the clear of dep recorded as clear: the override it
// removed (before) is written again, its reason, actor and expiry as they
// were, in one transaction with its record (a breaker.force-open whose
// rollback_of names clear), conditional on the item still absent, as the
// clear left it. An override written since is left alone (LeftAlone); one
// whose expiry has passed is not put back (Expired). svc is the context's
// lever service under the table's policy: the change is asked as
// [ActionRollback], which the policy may allow the clear's actor at once.
// actor is who acts ("": the service's actor).
func PutBack(ctx context.Context, svc lever.Changer, dep, actor, reason string, clear audit.Record, before Override) (RollbackResult, lever.Report, error) {
	c := lever.Change{Action: ActionRollback, Targets: []string{dep}, Reason: reason, Actor: actor, Params: RollbackParams{Of: clear, Before: before},
		Read: map[string]store.Item{dep: nil}, RollbackOf: &clear,
		Note: lever.Note{Outcome: "rolled back", Detail: "ROLLED BACK: the clear of " + dep + " (record " + clear.ID + ") did not hold, so its override was put back: " + reason}}
	rep, err := lever.Do(ctx, svc, c, nil)
	if ce := (*ConflictError)(nil); errors.As(err, &ce) {
		// Someone wrote it between the clear and the put-back's write.
		return RollbackResult{LeftAlone: &ce.Current}, rep, nil
	}
	if len(rep.Outcomes) == 0 && err == nil {
		err = errors.New("no outcome")
	}
	if err != nil {
		return RollbackResult{}, rep, fmt.Errorf("put back override of %s: %w", dep, err)
	}
	r, _ := rep.Outcomes[0].Result.(RollbackResult)
	return r, rep, nil
}
