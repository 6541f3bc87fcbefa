package tui

import (
	"context"
	"errors"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Requests lists and decides the table's change requests (the requests
// pane); [StoreRequests] implements it on a real store.
type Requests interface {
	// Pending lists the requests waiting for approvals, newest first: a
	// first page of them, and whether more wait past it.
	Pending(ctx context.Context) (list []approval.Request, more bool, err error)
	// Approve approves request id as reviewed (its hash sha256).
	Approve(ctx context.Context, id, sha256 string) (approval.Approved, error)
	// Deny closes request id with note.
	Deny(ctx context.Context, id, note string) (approval.Request, error)
}

// StoreRequests implements [Requests] through approval.Service, the
// service of koshactl request list, approve and deny: the same checks
// (a verified approver other than the requester, the policy asked again,
// the hash as reviewed), the same one transaction, the same records and
// notifications.
type StoreRequests struct {
	Approvals *approval.Service
	Log       audit.Appender
	Identity  func(ctx context.Context) (audit.Identity, error)
	Clock     clock.Clock
	// Notifier announces each approval and denial; nil announces nothing.
	Notifier notify.Notifier
}

var _ Requests = StoreRequests{}

// errFirstPage stops a listing after its first page.
var errFirstPage = errors.New("first page read")

// Pending implements [Requests]: the first page of the open requests
// (approval.OpenPage of the lists index, checked against their proofs:
// an index query and a batch read, never a scan), read only while the
// pane is shown; those past their expiry are left out. more says the
// open list goes on past the page (`koshactl request list` shows it all).
func (s StoreRequests) Pending(ctx context.Context) ([]approval.Request, bool, error) {
	var first approval.Listing
	err := s.Approvals.ListPages(ctx, approval.ListQuery{}, func(l approval.Listing) error {
		first = l
		return errFirstPage
	})
	if err != nil && !errors.Is(err, errFirstPage) {
		return nil, false, err
	}
	now := s.Clock.Now()
	var out []approval.Request
	for _, r := range first.Requests {
		if r.StatusAt(now) == approval.StatusPending {
			out = append(out, r)
		}
	}
	return out, first.More, nil
}

// Approve implements [Requests].
func (s StoreRequests) Approve(ctx context.Context, id, sha256 string) (approval.Approved, error) {
	by, err := s.Identity(ctx)
	if err != nil {
		return approval.Approved{}, err
	}
	res, err := s.Approvals.Approve(ctx, s.Log, approval.Approval{ID: id, Approver: by, SHA256: sha256})
	if res.Expired {
		s.announce(ctx, approval.ExpiredEvent(res.Request, by.Actor))
	}
	if res.AlreadyApplied {
		return res, nil // another approver applied it first: nothing changed
	}
	if err != nil {
		return res, err
	}
	if ev, ok := approval.ApprovedEvent(res, by.Actor); ok {
		s.announce(ctx, ev)
	}
	return res, nil
}

// Deny implements [Requests].
func (s StoreRequests) Deny(ctx context.Context, id, note string) (approval.Request, error) {
	by, err := s.Identity(ctx)
	if err != nil {
		return approval.Request{}, err
	}
	r, rec, err := s.Approvals.Decide(ctx, s.Log, id, by, false, note)
	if err != nil {
		return r, err
	}
	s.announce(ctx, approval.ClosedEvent(r, rec, by.Actor, note))
	return r, nil
}

func (s StoreRequests) announce(ctx context.Context, ev notify.Event) {
	if s.Notifier == nil {
		return
	}
	ev.Source = notify.SourceDashboard
	s.Notifier.Notify(ctx, ev)
}

// requestsPane is the pending requests: the last list read and the cursor.
type requestsPane struct {
	list []approval.Request
	// more says more requests wait than the first page listed.
	more    bool
	cursor  int
	loading bool
	loaded  bool
	err     error
}

func (p *requestsPane) move(delta int) {
	p.cursor = max(min(p.cursor+delta, len(p.list)-1), 0)
}

func (p *requestsPane) selected() *approval.Request {
	if p.cursor < 0 || p.cursor >= len(p.list) {
		return nil
	}
	return &p.list[p.cursor]
}

// Messages of the requests pane.
type (
	requestsMsg struct {
		list []approval.Request
		more bool
		err  error
	}
	approvedMsg struct {
		req approval.Request
		res approval.Approved
		err error
	}
	deniedMsg struct {
		req approval.Request
		err error
	}
)

func (m Model) loadRequests() tea.Cmd {
	rq := m.deps.Requests
	if rq == nil {
		return nil
	}
	return m.do(func(ctx context.Context) tea.Msg {
		list, more, err := rq.Pending(ctx)
		return requestsMsg{list: list, more: more, err: err}
	})
}

func (m Model) approve(r approval.Request) tea.Cmd {
	rq := m.deps.Requests
	return m.do(func(ctx context.Context) tea.Msg {
		res, err := rq.Approve(ctx, r.ID, r.SHA256)
		return approvedMsg{req: r, res: res, err: err}
	})
}

func (m Model) deny(r approval.Request, note string) tea.Cmd {
	rq := m.deps.Requests
	return m.do(func(ctx context.Context) tea.Msg {
		_, err := rq.Deny(ctx, r.ID, note)
		return deniedMsg{req: r, err: err}
	})
}

// openRequests shows the pending requests and reads them.
func (m Model) openRequests() (tea.Model, tea.Cmd) {
	if m.deps.Requests == nil {
		m.setResult("change requests are not available here", true)
		return m, nil
	}
	m.mode = modeRequests
	m.requests.loading = true
	return m, m.loadRequests()
}

func (m Model) requestsKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		m.quitting = true
		return m, tea.Quit
	case key.Matches(msg, k.Back):
		m.mode = modeTable
	case key.Matches(msg, k.Up):
		m.requests.move(-1)
	case key.Matches(msg, k.Down):
		m.requests.move(1)
	case key.Matches(msg, k.Approve):
		if r := m.requests.selected(); r != nil {
			m.prompt = newRequestPrompt(promptApprove, *r, m.now, m.opts, m.styles)
			return m, m.prompt.input.Focus()
		}
	case key.Matches(msg, k.Deny):
		if r := m.requests.selected(); r != nil {
			m.prompt = newRequestPrompt(promptDeny, *r, m.now, m.opts, m.styles)
			return m, m.prompt.input.Focus()
		}
	case key.Matches(msg, k.Refresh):
		m.status, m.statusIsErr = statusRefreshing, false
		return m, m.refresh()
	case key.Matches(msg, k.Help):
		m.mode = modeHelp
	}
	return m, nil
}

// approvedResult is the status line after an approval.
func approvedResult(msg approvedMsg) (string, bool) {
	id, res := msg.req.ID, msg.res
	var ce *breaker.ConflictError
	switch {
	case msg.err == nil && res.AlreadyApplied:
		return fmt.Sprintf("request %s was already applied: nothing changed", id), false
	case msg.err == nil && res.Authorized:
		return fmt.Sprintf("request %s approved: %s may run with --request %s; nothing was applied", id, res.Request.Change.Summary(), id), false
	case msg.err == nil && res.Applied:
		return fmt.Sprintf("request %s approved and applied: %s (requested by %s)", id, res.Request.Change.Summary(), res.Request.Requester), false
	case msg.err == nil:
		return fmt.Sprintf("request %s approved: it needs %s more from other people", id, human.Count(int64(res.Remaining), "approval")), false
	case errors.Is(msg.err, store.ErrOutcomeUnknown):
		return fmt.Sprintf("approve %s: the outcome is unknown, check with koshactl request show %s: %v", id, id, msg.err), true
	case errors.As(msg.err, &ce):
		return fmt.Sprintf("request %s not applied: %v", id, msg.err), true
	}
	return fmt.Sprintf("request %s not approved: %v", id, msg.err), true
}

func deniedResult(msg deniedMsg) (string, bool) {
	if msg.err != nil {
		return fmt.Sprintf("request %s not denied: %v", msg.req.ID, msg.err), true
	}
	return fmt.Sprintf("request %s denied: %s can never be applied", msg.req.ID, msg.req.Change.Summary()), false
}

// pendingResult is the status line of a lever the policy turned into a
// change request.
func pendingResult(p lever.Pending) string {
	return fmt.Sprintf("not applied: the table's policy needs %s · request %s (%s) · approve with: %s",
		human.Count(int64(p.Needed), "approval"), p.ID, p.Summary, p.ApproveCommand())
}

// requestLines renders the pending requests pane.
func (m Model) requestLines(height int) []string {
	st := m.styles
	p := m.requests
	lines := []string{st.Title.Render("Pending change requests") + st.Dim.Render(" · a approve · d deny · esc back")}
	switch {
	case p.err != nil:
		lines = append(lines, st.StatusError.Render(ansi.Truncate("✗ requests failed: "+textsafe.OneLine(p.err.Error()), m.width, "…")))
	case !p.loaded:
		return append(lines, st.Dim.Render("  loading…"))
	}
	if len(p.list) == 0 {
		return append(lines, st.Dim.Render("  no pending requests"))
	}
	idW, apW, exW := 12, 9, 10
	rest := max(m.width-2-idW-1-apW-1-exW-1, 20)
	reqW := min(max(rest/3, 10), 30)
	chW := rest - reqW - 1
	lines = append(lines, st.ColumnHeader.Render("  "+pad("REQUEST", idW)+" "+pad("CHANGE", chW)+" "+pad("REQUESTER", reqW)+" "+
		pad("APPROVALS", apW)+" "+pad("EXPIRES", exW)))
	rows := height
	if p.more {
		rows-- // the last line says there are more
	}
	for i, r := range p.list {
		if len(lines) >= rows {
			break
		}
		prefix := "  "
		id := pad(ansi.Truncate(safe(r.ID), idW, "…"), idW)
		if i == p.cursor {
			prefix, id = "› ", st.SelectedPaint.Apply(id)
		}
		approvals := pad(strconv.Itoa(len(r.Approvers))+" of "+strconv.Itoa(r.Needed), apW)
		if flag := verificationFlag(r.Verification); flag != "" {
			// Its item disagrees with its proofs (or it has none): its
			// approvers are not to be believed, and it is never applied.
			approvals = st.StatusError.Render(pad(flag, apW))
		}
		lines = append(lines, prefix+id+" "+pad(ansi.Truncate(safe(r.Change.Summary()), chW, "…"), chW)+" "+
			pad(ansi.Truncate(shortActor(r.Requester), reqW, "…"), reqW)+" "+
			approvals+" "+
			pad("in "+human.Age(max(r.ExpiresAt.Sub(m.now), 0)), exW))
	}
	if p.more {
		lines = append(lines, st.Dim.Render(ansi.Truncate(fmt.Sprintf("  … and more: the %d newest are listed here; koshactl request list shows them all", len(p.list)), m.width, "…")))
	}
	return lines
}

// verificationFlag is the mark of a request whose item disagrees with its
// proofs (TAMPERED) or that has none (UNPROVEN), as request list marks it;
// "" for one that agrees.
func verificationFlag(v approval.Verification) string {
	switch {
	case v.Tampered != "":
		return "TAMPERED"
	case v.Unproven != "":
		return "UNPROVEN"
	}
	return ""
}

// requestHeader is the prompt's header of a request being decided.
func requestHeader(verb string, r approval.Request, now time.Time, contextName string) []string {
	approvers := ""
	if len(r.Approvers) > 0 {
		approvers = " (" + strings.Join(r.Approvers, ", ") + ")"
	}
	lines := []string{
		fmt.Sprintf("%s change request %s · context %s", verb, r.ID, contextName),
		"Change:    " + r.Change.Summary(),
		"Reason:    " + r.Change.Reason,
		"Requester: " + r.Requester,
		fmt.Sprintf("Approvals: %d of %d%s · expires in %s", len(r.Approvers), r.Needed, approvers, human.Age(max(r.ExpiresAt.Sub(now), 0))),
		"SHA-256: " + r.SHA256,
	}
	switch {
	case r.Tampered != "":
		lines = append(lines, "TAMPERED: "+r.Tampered)
	case r.Unproven != "":
		lines = append(lines, "UNPROVEN: "+r.Unproven)
	}
	return lines
}
