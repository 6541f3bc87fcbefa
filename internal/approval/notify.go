package approval

import (
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/notify"
)

// The notifications of requests: one builder per event, so every surface
// that makes or decides a request (the request and lever commands, the
// dashboard, drills) announces it in the same words.

// ApproveCommand is the command that approves request id.
func ApproveCommand(id string) string { return "koshactl request approve " + id }

// RequestedEvent announces a new request r (its record rec).
func RequestedEvent(r Request, rec audit.Record) notify.Event {
	return notify.Event{Action: ActionRequestCreate, Actor: r.Requester, Reason: r.Change.Reason,
		Outcome: "pending", Detail: fmt.Sprintf("%s needs %d approval(s): %s", r.Change.Summary(), r.Needed, ApproveCommand(r.ID)),
		Levers: []notify.Lever{{Subject: RequestPrefix + r.ID, Change: "requested: " + r.Change.Summary(), AuditID: rec.ID}}}
}

// ApprovedEvent announces what approval res by actor did (nothing to say
// of an approval that found it applied already: ok is false).
func ApprovedEvent(res Approved, actor string) (ev notify.Event, ok bool) {
	if res.AlreadyApplied {
		return notify.Event{}, false
	}
	r := res.Request
	outcome := "approved"
	if res.Applied {
		outcome = "applied"
	}
	ev = notify.Event{Action: ActionRequestApprove, Actor: actor, Reason: r.Change.Reason, Outcome: outcome,
		Detail: fmt.Sprintf("request %s (%s) requested by %s, approved by %v", r.ID, r.Change.Summary(), r.Requester, r.Approvers)}
	if res.Authorized {
		ev.Detail += fmt.Sprintf("; the drill may run with --request %s until %s (nothing was applied)", r.ID, r.ExpiresAt.Format(time.RFC3339))
	}
	switch {
	case res.Applied:
		ev.Action = r.Change.Action
		if res.Report.Event != nil {
			ev.Levers = res.Report.Event.Levers
		}
	default:
		ev.Levers = []notify.Lever{{Subject: RequestPrefix + r.ID, Change: outcome}}
		if len(res.Records) > 0 {
			ev.Levers[0].AuditID = res.Records[0].ID
		}
	}
	return ev, true
}

// ExpiredEvent announces a request an approval found expired (and marked
// so).
func ExpiredEvent(r Request, actor string) notify.Event {
	return notify.Event{Action: ActionRequestExpire, Actor: actor, Reason: r.Change.Reason,
		Outcome: "expired", Detail: "request " + r.ID + " expired without its approvals: " + r.Change.Summary(),
		Levers: []notify.Lever{{Subject: RequestPrefix + r.ID, Change: "expired"}}}
}

// ClosedEvent announces r closed unapplied, as its status says: denied, or
// canceled by its requester (its record rec).
func ClosedEvent(r Request, rec audit.Record, actor, note string) notify.Event {
	action := ActionRequestDeny
	if r.Status == StatusCanceled {
		action = ActionRequestCancel
	}
	return notify.Event{Action: action, Actor: actor, Reason: note, Outcome: r.Status,
		Detail: "request " + r.ID + " (" + r.Status + "): " + r.Change.Summary(),
		Levers: []notify.Lever{{Subject: RequestPrefix + r.ID, Change: r.Status, AuditID: rec.ID}}}
}
