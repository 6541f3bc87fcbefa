package approval_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// A denial and a cancellation are announced as DeniedEvent and
// CanceledEvent announced them before they became one ClosedEvent: the
// action of the verb, the status as the outcome and in the detail and the
// lever's change, the decider, the note and the audit record's id, field
// for field, for the request as Decide returns it.
func TestClosedEventIsTheDeniedAndCanceledEventsOfBefore(t *testing.T) {
	_, svc, log, _ := fourEyes(t)
	ctx := context.Background()
	for _, c := range []struct {
		cancel         bool
		action, status string
	}{
		{false, approval.ActionRequestDeny, approval.StatusDenied},
		{true, approval.ActionRequestCancel, approval.StatusCanceled},
	} {
		r, _, err := svc.Submit(ctx, log, approval.Submission{Change: forceChange(), Requester: alice, TTL: 10 * time.Minute,
			Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		by := bob
		if c.cancel {
			by = alice
		}
		closed, rec, err := svc.Decide(ctx, log, r.ID, by, c.cancel, "note <b>")
		if err != nil {
			t.Fatal(err)
		}
		// What closedEvent(action, status, ...) built (7846ade).
		want := notify.Event{Action: c.action, Actor: by.Actor, Reason: "note <b>", Outcome: c.status,
			Detail: "request " + closed.ID + " (" + c.status + "): " + closed.Change.Summary(),
			Levers: []notify.Lever{{Subject: approval.RequestPrefix + closed.ID, Change: c.status, AuditID: rec.ID}}}
		if got := approval.ClosedEvent(closed, rec, by.Actor, "note <b>"); !reflect.DeepEqual(got, want) {
			t.Errorf("cancel=%t:\n got %#v\nwant %#v", c.cancel, got, want)
		}
		if rec.ID == "" {
			t.Errorf("cancel=%t: no audit record id to announce", c.cancel)
		}
	}
}
