package notify

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
)

// ActionPolicyBypassed is the action of the notification of a lever change
// the table's policy should have seen and did not: recorded since the
// policy was set, without an approval (policy.Unapproved). `koshactl audit
// list --unapproved --notify` sends it, one per such record.
const ActionPolicyBypassed = "policy.bypassed"

// OutcomeUnapproved is the outcome of a [ActionPolicyBypassed] notification.
const OutcomeUnapproved = "unapproved"

// BypassedEvent announces r, a lever change recorded at or after since (when
// the table first had a policy) without an approval, as reporter found it.
// Its actor, reason and subject are the record's, as recorded (text from
// the table: every form renders it escaped, as any other); reporter is who
// sends it, named in its detail and the actor of its notify.failed record
// when a sink does not take it (the change's actor did not send it).
func BypassedEvent(r audit.Record, since time.Time, reporter string) Event {
	at, policySince := r.Time.UTC().Format(time.RFC3339Nano), since.UTC().Format(time.RFC3339Nano)
	return Event{Action: ActionPolicyBypassed, Actor: r.Actor, Reason: r.Reason, Outcome: OutcomeUnapproved,
		Detail: "audit record " + r.ID + ": " + r.Action + " of " + r.Subject + " at " + at +
			" carries no approval, though the table has had a change policy since " + policySince +
			" (made without asking it: another tool, an older koshactl, a direct write); found by " + reporter,
		Levers:   []Lever{{Subject: r.Subject, Change: r.Action + " without an approval", AuditID: r.ID}},
		reporter: reporter}
}
