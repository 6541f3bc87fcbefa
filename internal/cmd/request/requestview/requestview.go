// Package requestview is how the request commands show a change request:
// its JSON document and its detail lines.
package requestview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// View is a request as -o json shows it: the stored request with its status
// at now.
type View struct {
	approval.Request
	// Status is the status at now (a pending request past its expiry is
	// expired).
	Status  string `json:"status"`
	Summary string `json:"summary"`
	// Impact is what a pending request's change does to the platform's
	// tools, told when shown (request show; absent elsewhere).
	Impact json.RawMessage `json:"impact,omitempty"`
}

// Of is r's view at now.
func Of(r approval.Request, now time.Time) View {
	return View{Request: r, Status: r.StatusAt(now), Summary: r.Change.Summary()}
}

// Print writes r's detail lines (every value through textsafe).
func Print(w io.Writer, r approval.Request, now time.Time, tty bool) {
	fields := []cmdutil.Field{
		{Label: "Request", Value: r.ID},
		{Label: "Status", Value: r.StatusAt(now)},
		{Label: "Change", Value: r.Change.Summary()},
		{Label: "Reason", Value: r.Change.Reason},
		{Label: "Requester", Value: actor(r.Requester, string(r.RequesterSource))},
		{Label: "Approvals", Value: strconv.Itoa(len(r.Approvers)) + " of " + strconv.Itoa(r.Needed) + approvers(r.Approvers)},
	}
	for _, c := range r.Comments {
		fields = append(fields, cmdutil.Field{Label: "Comment", Value: c.By + ": " + c.Text})
	}
	fields = append(fields, []cmdutil.Field{
		{Label: "Created", Value: cmdutil.FormatTime(r.CreatedAt, now, tty)},
		{Label: "Expires", Value: cmdutil.FormatTime(r.ExpiresAt, now, tty)},
		{Label: "SHA-256", Value: r.SHA256},
	}...)
	if len(r.Policies) > 0 {
		fields = append(fields, cmdutil.Field{Label: "Policies", Value: strings.Join(r.Policies, ", ")})
	}
	if r.DecidedBy != "" {
		fields = append(fields, cmdutil.Field{Label: "Decided by", Value: r.DecidedBy + " " + cmdutil.FormatTime(r.DecidedAt, now, tty)})
	}
	if r.Note != "" {
		fields = append(fields, cmdutil.Field{Label: "Note", Value: r.Note})
	}
	switch {
	case r.Tampered != "":
		fields = append(fields, cmdutil.Field{Label: "Proofs", Value: "TAMPERED: " + r.Tampered})
	case r.Unproven != "":
		fields = append(fields, cmdutil.Field{Label: "Proofs", Value: "UNPROVEN: " + r.Unproven})
	case len(r.Proofs) > 0:
		fields = append(fields, cmdutil.Field{Label: "Proofs", Value: strconv.Itoa(len(r.Proofs)) + " (who asked, approved or closed it, each keyed by its writer)"})
	}
	cmdutil.PrintFields(w, fields...)
}

// Flagged is a status as a table shows it: TAMPERED when the item
// disagrees with its proofs, UNPROVEN when it has none of asking (or of
// breaking the glass).
func Flagged(status string, v approval.Verification) string {
	switch {
	case v.Tampered != "":
		return status + " TAMPERED"
	case v.Unproven != "":
		return status + " UNPROVEN"
	}
	return status
}

// Tampered reports, on errOut, each item of vs that disagrees with its
// proofs, and returns the listing's error then (exit 14): such an item is
// never acted on, and whoever wrote it did so without koshactl. An
// unproven item (made before koshactl kept proofs) is no error.
func Tampered(errOut io.Writer, vs ...approval.Verification) error {
	n := 0
	for _, v := range vs {
		if v.Tampered != "" {
			n++
			fmt.Fprintf(errOut, "tampered: %s\n", textsafe.Line(v.Tampered))
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d item(s) disagree with their proofs (listed above): they are never acted on; find out who wrote them", approval.ErrTampered, n)
}

func actor(a, source string) string {
	switch audit.ActorSource(source) {
	case audit.ActorUnverified:
		return a + " (unverified)"
	case audit.ActorDemo:
		return a + " (demo identity of the local context)"
	case audit.ActorSTS:
	}
	return a
}

func approvers(as []string) string {
	if len(as) == 0 {
		return ""
	}
	return ": " + strings.Join(as, ", ")
}

// Expire marks the requests of rs stored pending past their expiry as
// expired ([approval.Service.ExpireDue]: once, by whoever sees it first,
// audited), announces each one this command marked (notification
// request.expire, outcome expired), and returns rs with those replaced as
// marked. A failure to mark is a warning on errOut, not the command's
// failure: the listing stands (a role that may only read requests sees
// them expired all the same), and the next command allowed to write
// requests records the expiry.
func Expire(ctx context.Context, env *cmdenv.Env, errOut io.Writer, rs []approval.Request) []approval.Request {
	marked, err := env.Approvals().ExpireDue(ctx, env.Audit(), env.CallerIdentity, rs)
	for _, m := range marked {
		cmdenv.Notify(ctx, env, false, approval.ExpiredEvent(m, m.DecidedBy))
		for i := range rs {
			if rs[i].ID == m.ID {
				rs[i] = m
			}
		}
	}
	if err != nil {
		fmt.Fprintf(errOut, "warning: an expired request could not be marked expired (%s); it reads as expired all the same, and is recorded by the next command allowed to write requests\n",
			textsafe.Line(err.Error()))
	}
	return rs
}
