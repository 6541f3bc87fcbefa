package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

var (
	aliceID = audit.Identity{Actor: "arn:aws:iam::123456789012:user/alice", Source: audit.ActorSTS, UserID: "AIDAALICE"}
	bobID   = audit.Identity{Actor: "arn:aws:iam::123456789012:user/bob", Source: audit.ActorSTS, UserID: "AIDABOB"}
)

type recordingNotifier struct {
	mu     sync.Mutex
	events []notify.Event
}

func (n *recordingNotifier) Notify(_ context.Context, ev notify.Event) notify.Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, ev)
	return notify.Report{}
}

func (n *recordingNotifier) actions() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, ev := range n.events {
		out = append(out, ev.Action+":"+ev.Source)
	}
	return out
}

// The dashboard's levers ask the table's policy through the CLI's own gate
// (approval.Gate over policy.Decide): under the four-eyes policy alice's
// force becomes a request and forces nothing; bob approves it from the
// dashboard's requests and it is applied, stamped approved; a write that
// did not ask the policy is flagged.
func TestDashboardLeversFollowTheTablesPolicy(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clocktest.NewFake(epoch)
	log := audit.NewLog(st, clk, "local")
	text, err := os.ReadFile("../../docs/policies/four-eyes.cedar")
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.Parse(approval.PolicySchema(levertest.Specs()), "four-eyes.cedar", text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.NewPolicies(st, clk, approval.PolicySchema(levertest.Specs())).Set(ctx, log, set, audit.Identity{Actor: "admin", Source: audit.ActorUnverified}, "four eyes"); err != nil {
		t.Fatal(err)
	}
	levers := levertest.Levers(st, clk, log)
	svc := approval.NewService(st, clk, levers, "local")
	n := &recordingNotifier{}
	identity := func(id audit.Identity) func(context.Context) (audit.Identity, error) {
		return func(context.Context) (audit.Identity, error) { return id, nil }
	}
	alice := StoreOverrides{Overrides: breaker.NewOverrides(st, clk), Known: []string{"openai", "core-api"}, Notifier: n,
		Levers: svc.Guard(levers.WithActor(func(context.Context) (string, error) { return aliceID.Actor, nil }), identity(aliceID), notify.SourceDashboard)}

	_, err = alice.Force(ctx, ForceRequest{Dependency: "openai", Reason: "provider incident", For: 30 * time.Minute})
	var pe *lever.PendingError
	if !errors.As(err, &pe) || pe.Pending.Needed != 1 || pe.Pending.Requester != aliceID.Actor {
		t.Fatalf("alice's force under four eyes: %v, want a pending request", err)
	}
	list, err := alice.List(ctx)
	if err != nil || len(list.Overrides) != 0 || list.PolicySince.IsZero() {
		t.Fatalf("after the request: %+v, %v; want nothing forced and the policy's since", list, err)
	}
	if got := pendingResult(pe.Pending); !strings.Contains(got, "request "+pe.Pending.ID) || !strings.Contains(got, "koshactl request approve "+pe.Pending.ID) {
		t.Errorf("status %q lacks the request id or the approve command", got)
	}

	reqs := func(id audit.Identity) StoreRequests {
		return StoreRequests{Approvals: svc, Log: log, Identity: identity(id), Clock: clk, Notifier: n}
	}
	pending, more, err := reqs(bobID).Pending(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != pe.Pending.ID || more {
		t.Fatalf("pending = %+v, more %v, %v; want the one, no more", pending, more, err)
	}
	if _, err := reqs(aliceID).Approve(ctx, pending[0].ID, pending[0].SHA256); !errors.Is(err, approval.ErrSelf) {
		t.Errorf("alice approving her own request: %v, want ErrSelf", err)
	}
	res, err := reqs(bobID).Approve(ctx, pending[0].ID, pending[0].SHA256)
	if err != nil || !res.Applied {
		t.Fatalf("bob's approval: %+v, %v", res, err)
	}
	list, _ = alice.List(ctx)
	if len(list.Overrides) != 1 {
		t.Fatalf("after the approval: %+v", list)
	}
	o := list.Overrides[0]
	if o.Approval == nil || o.Approval.Decision != audit.DecisionApproved || o.Approval.Request != pe.Pending.ID ||
		policy.UnapprovedAt(o.CreatedAt, o.Approval, list.PolicySince) {
		t.Errorf("the approved override carries %+v, want approved by request %s", o.Approval, pe.Pending.ID)
	}
	if pending, _, _ := reqs(bobID).Pending(ctx); len(pending) != 0 {
		t.Errorf("still pending after it was applied: %+v", pending)
	}

	// A clear asks too: a request, nothing cleared; bob denies it.
	_, err = alice.Clear(ctx, "openai", "recovered")
	if !errors.As(err, &pe) {
		t.Fatalf("alice's clear: %v, want a pending request", err)
	}
	if r, err := svc.Get(ctx, pe.Pending.ID); err != nil || r.Change.Action != breaker.ActionClear {
		t.Fatalf("the clear's request: %+v, %v", r, err)
	}
	if _, err := reqs(bobID).Deny(ctx, pe.Pending.ID, "not yet"); err != nil {
		t.Fatal(err)
	}
	if _, err := reqs(bobID).Approve(ctx, pe.Pending.ID, pe.Pending.SHA256); !errors.Is(err, approval.ErrClosed) {
		t.Errorf("approving a denied request: %v, want ErrClosed", err)
	}

	// A write that did not ask the policy (an older koshactl) is flagged.
	clk.Advance(time.Minute)
	if _, _, err := levertest.Force(ctx, st, clk, log, levertest.Req{Dependency: "core-api", Reason: "bypass", Actor: "mallory", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	list, _ = alice.List(ctx)
	for _, o := range list.Overrides {
		if got, want := policy.UnapprovedAt(o.CreatedAt, o.Approval, list.PolicySince), o.Dependency == "core-api"; got != want {
			t.Errorf("%s unapproved = %v, want %v", o.Dependency, got, want)
		}
	}
	want := []string{approval.ActionRequestCreate, breaker.ActionForceOpen, approval.ActionRequestCreate, approval.ActionRequestDeny}
	got := n.actions()
	if len(got) != len(want) {
		t.Fatalf("notifications %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i]+":"+notify.SourceDashboard {
			t.Errorf("notification %d = %s, want %s from the dashboard", i, got[i], want[i])
		}
	}
}

// fakeRequests is an in-memory request queue.
type fakeRequests struct {
	mu       sync.Mutex
	list     []approval.Request
	approved []string // id:sha256
	denied   []string // id:note
	// approveErr refuses approvals.
	approveErr error
	// more says more wait past the list.
	more bool
}

func (f *fakeRequests) Pending(context.Context) ([]approval.Request, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]approval.Request(nil), f.list...), f.more, nil
}

func (f *fakeRequests) take(id string) (approval.Request, bool) {
	for i, r := range f.list {
		if r.ID == id {
			f.list = append(f.list[:i], f.list[i+1:]...)
			return r, true
		}
	}
	return approval.Request{}, false
}

func (f *fakeRequests) Approve(_ context.Context, id, sha string) (approval.Approved, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approved = append(f.approved, id+":"+sha)
	if f.approveErr != nil {
		return approval.Approved{}, f.approveErr
	}
	r, _ := f.take(id)
	r.Status, r.Approvers = approval.StatusApplied, []string{bobID.Actor}
	return approval.Approved{Request: r, Applied: true}, nil
}

func (f *fakeRequests) Deny(_ context.Context, id, note string) (approval.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.denied = append(f.denied, id+":"+note)
	r, _ := f.take(id)
	return r, nil
}

func pendingRequest(id string) approval.Request {
	r := approval.PendingRequest(pending(id), epoch.Add(-time.Minute))
	r.Change.Action, r.Change.Targets, r.Change.Reason = breaker.ActionForceOpen, []string{"openai"}, "provider incident"
	return r
}

// pending is a request of alice's force of openai for 30m.
func pending(id string) lever.Pending {
	return lever.Pending{ID: id, SHA256: strings.Repeat("ab", 32), Requester: aliceID.Actor, Summary: "force open openai for 30m",
		ExpiresAt: epoch.Add(59 * time.Minute), Needed: 1}
}

// pendingOverrides answers every force and clear as the guard does under a
// policy that needs an approval.
type pendingOverrides struct {
	*fakeOverrides
	req approval.Request
}

func (p pendingOverrides) Force(context.Context, ForceRequest) (lever.Report, error) {
	pd := pending(p.req.ID)
	return lever.Report{Pending: &pd}, &lever.PendingError{Pending: pd}
}

func (p pendingOverrides) Clear(context.Context, string, string) (lever.Report, error) {
	pd := pending(p.req.ID)
	return lever.Report{Pending: &pd}, &lever.PendingError{Pending: pd}
}

func TestAForceThePolicyHoldsShowsTheRequest(t *testing.T) {
	h := newHarness(t, Options{})
	rq := &fakeRequests{}
	req := pendingRequest("3f2a9c1b0d4e")
	h.m.deps.Overrides = pendingOverrides{fakeOverrides: h.ov, req: req}
	h.m.deps.Requests = rq
	h.press("f")
	h.typeText("failover drill")
	h.press("enter", "enter")
	h.wantStatus("not applied: the table's policy needs 1 approval · request 3f2a9c1b0d4e", false)
	h.wantStatus("approve with: koshactl request approve 3f2a9c1b0d4e", false)
	if st := h.row("core-api"); st.OverrideActive {
		t.Error("core-api shows forced although the policy held the change")
	}
}

func TestApproveAndDenyFromThePendingRequests(t *testing.T) {
	h := newHarness(t, Options{ContextName: "prod-eu", Protected: true})
	rq := &fakeRequests{list: []approval.Request{pendingRequest("3f2a9c1b0d4e"), pendingRequest("77aa00bb11cc")}}
	h.m.deps.Requests = rq
	h.press("p")
	h.wantScreen("Pending change requests", "3f2a9c1b0d4e", "force open openai for 30m", "alice", "0 of 1", "in 59m")
	// Approving asks for the context's name on a protected context.
	h.press("a")
	h.wantScreen("Approve change request 3f2a9c1b0d4e · context prod-eu", "SHA-256: abab", "PROTECTED context: type \"prod-eu\"")
	h.typeText("prod")
	h.press("enter")
	h.wantScreen("that is not \"prod-eu\"")
	if len(rq.approved) != 0 {
		t.Fatal("approved before the context's name was typed")
	}
	h.typeText("-eu")
	h.press("enter")
	if len(rq.approved) != 1 || rq.approved[0] != "3f2a9c1b0d4e:"+strings.Repeat("ab", 32) {
		t.Fatalf("approvals = %v, want the request with the hash shown", rq.approved)
	}
	h.wantStatus("request 3f2a9c1b0d4e approved and applied", false)
	h.wantScreen("77aa00bb11cc")
	if strings.Contains(h.screen(), "3f2a9c1b0d4e  ") {
		t.Errorf("the applied request is still listed:\n%s", h.screen())
	}
	// Denying asks for a note, then the context's name.
	h.press("d")
	h.typeText("not during the freeze")
	h.press("enter")
	h.typeText("prod-eu")
	h.press("enter")
	if len(rq.denied) != 1 || rq.denied[0] != "77aa00bb11cc:not during the freeze" {
		t.Fatalf("denials = %v", rq.denied)
	}
	h.wantStatus("request 77aa00bb11cc denied", false)
	h.wantScreen("no pending requests")
	// A refusal is the domain's sentence, as an error.
	rq.list = []approval.Request{pendingRequest("99aa00bb11cc")}
	rq.approveErr = approval.ErrSelf
	h.press("r", "a")
	h.typeText("prod-eu")
	h.press("enter")
	h.wantStatus("request 99aa00bb11cc not approved: four eyes: someone else must do it", true)
	h.press("esc")
	if h.m.mode != modeTable {
		t.Errorf("esc left the pane in mode %d", h.m.mode)
	}
}

func TestAnUnprotectedApprovalIsOneEnter(t *testing.T) {
	h := newHarness(t, Options{})
	rq := &fakeRequests{list: []approval.Request{pendingRequest("3f2a9c1b0d4e")}}
	h.m.deps.Requests = rq
	h.press("p", "a")
	h.wantScreen("enter: APPROVE · esc: cancel")
	h.press("esc")
	h.wantStatus("canceled: nothing was changed", false)
	if len(rq.approved) != 0 {
		t.Fatal("esc approved")
	}
	h.press("a", "enter")
	if len(rq.approved) != 1 {
		t.Fatalf("approvals = %v", rq.approved)
	}
}

// An override written since the table had a policy without an approval
// (a writer that bypassed it) is marked on its row and in its detail; one
// the policy let through is not.
func TestAnOverrideWrittenWithoutApprovalIsMarked(t *testing.T) {
	h := newHarness(t, Options{})
	h.ov.policySince = epoch.Add(-time.Hour)
	h.press("r")
	h.send(tea.WindowSizeMsg{Width: 160, Height: 24})
	h.wantScreen("UNAPPROVED! 27m alice")
	h.press("down", "enter")
	h.wantScreen("UNAPPROVED: written without asking the table's policy")
	h.press("esc")
	o, _ := h.ov.get("openai")
	o.Approval = &audit.Approval{Decision: audit.DecisionApproved, Request: "3f2a9c1b0d4e", Requester: aliceID.Actor, Approvers: []string{bobID.Actor}}
	h.ov.items["openai"] = o
	h.press("r")
	if strings.Contains(h.screen(), "UNAPPROVED") {
		t.Errorf("an approved override is marked:\n%s", h.screen())
	}
	h.press("enter")
	h.wantScreen("approval: approved request 3f2a9c1b0d4e of alice by " + bobID.Actor)
}
