// Package requestview is how the request commands show a change request:
// its JSON document and its detail lines.
package requestview

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// View is a request as -o json shows it: the stored request with its status
// at now.
type View struct {
	approval.Request
	// Status is the status at now (a pending request past its expiry is
	// expired).
	Status  string `json:"status"`
	Summary string `json:"summary"`
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
		{Label: "Created", Value: cmdutil.FormatTime(r.CreatedAt, now, tty)},
		{Label: "Expires", Value: cmdutil.FormatTime(r.ExpiresAt, now, tty)},
		{Label: "SHA-256", Value: r.SHA256},
	}
	if len(r.Policies) > 0 {
		fields = append(fields, cmdutil.Field{Label: "Policies", Value: strings.Join(r.Policies, ", ")})
	}
	if r.DecidedBy != "" {
		fields = append(fields, cmdutil.Field{Label: "Decided by", Value: r.DecidedBy + " " + cmdutil.FormatTime(r.DecidedAt, now, tty)})
	}
	if r.Note != "" {
		fields = append(fields, cmdutil.Field{Label: "Note", Value: r.Note})
	}
	cmdutil.PrintFields(w, fields...)
}

func actor(a, source string) string {
	if source == "unverified" {
		return a + " (unverified)"
	}
	return a
}

func approvers(as []string) string {
	if len(as) == 0 {
		return ""
	}
	return ": " + strings.Join(as, ", ")
}
