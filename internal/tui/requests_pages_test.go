package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// countingStore counts the scans and index queries sent to its store.
type countingStore struct {
	*sqlite.Store
	scans, queries atomic.Int64
}

func (c *countingStore) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	c.scans.Add(1)
	return c.Store.Scan(ctx, q)
}

func (c *countingStore) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	c.queries.Add(1)
	return c.Store.Query(ctx, q)
}

// The requests pane reads the first page of the open requests from the
// lists index (one query, then the batch read of their proofs), never a
// scan of the table, whatever it holds; with more pending than a page it
// shows the newest page and says there are more.
func TestRequestsPaneReadsTheFirstPageWithoutAScan(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c := &countingStore{Store: st}
	clk := clocktest.NewFake(epoch)
	log := audit.NewLog(c, clk, "local")
	text, err := os.ReadFile("../../docs/policies/four-eyes.cedar")
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.Parse(approval.PolicySchema(levertest.Specs()), "four-eyes.cedar", text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.NewPolicies(c, clk, approval.PolicySchema(levertest.Specs())).Set(ctx, log, set, audit.Identity{Actor: "admin", Source: audit.ActorUnverified}, "four eyes"); err != nil {
		t.Fatal(err)
	}
	svc := approval.NewService(c, clk, levertest.Levers(c, clk, log), "local")
	var ids []string
	for i := range approval.OpenPage + 2 {
		clk.Advance(time.Second)
		r, _, err := svc.Submit(ctx, log, approval.Submission{Requester: aliceID, Decision: policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1},
			Change: approval.Change{Action: breaker.ActionForceOpen, Targets: []string{fmt.Sprintf("dep-%03d", i)}, Reason: "provider incident",
				Params: json.RawMessage(`{"for_seconds":1800}`), Before: map[string]json.RawMessage{fmt.Sprintf("dep-%03d", i): json.RawMessage("null")}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	reqs := StoreRequests{Approvals: svc, Log: log, Clock: clk,
		Identity: func(context.Context) (audit.Identity, error) { return bobID, nil }}

	c.scans.Store(0)
	c.queries.Store(0)
	list, more, err := reqs.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, q := c.scans.Load(), c.queries.Load(); s != 0 || q != 1 {
		t.Errorf("the pane's read: %d scans, %d index queries; want none, one", s, q)
	}
	if len(list) != approval.OpenPage || !more || list[0].ID != ids[len(ids)-1] || list[len(list)-1].ID != ids[2] {
		t.Fatalf("the pane lists %d (more %v), from %v to %v; want the %d newest, %s to %s, and more", len(list), more,
			list[0].ID, list[len(list)-1].ID, approval.OpenPage, ids[len(ids)-1], ids[2])
	}

	// Two decided: the rest fit on a page, and nothing says more.
	for _, id := range ids[:2] {
		if _, err := reqs.Deny(ctx, id, "not now"); err != nil {
			t.Fatal(err)
		}
	}
	if list, more, err := reqs.Pending(ctx); err != nil || len(list) != approval.OpenPage || more {
		t.Errorf("after two denials: %d listed, more %v, %v; want %d, no more", len(list), more, err, approval.OpenPage)
	}
}

// The pane says when more requests wait than it read, and not otherwise.
func TestRequestsPaneSaysThereAreMore(t *testing.T) {
	h := newHarness(t, Options{})
	rq := &fakeRequests{list: []approval.Request{pendingRequest("3f2a9c1b0d4e"), pendingRequest("77aa00bb11cc")}}
	h.m.deps.Requests = rq
	h.press("p")
	h.wantScreen("3f2a9c1b0d4e", "77aa00bb11cc")
	if s := h.screen(); strings.Contains(s, "and more") {
		t.Errorf("the pane says more with none:\n%s", s)
	}
	rq.more = true
	h.press("r")
	h.wantScreen("3f2a9c1b0d4e", "… and more: the 2 newest are listed here; koshactl request list shows them all")
}

// A request whose item disagrees with its proofs is marked TAMPERED in the
// pane, in place of the approvals its item claims, and its prompt says
// why (escaped); one without proofs, UNPROVEN.
func TestRequestsPaneMarksTamperedRequests(t *testing.T) {
	h := newHarness(t, Options{})
	tampered, unproven := pendingRequest("3f2a9c1b0d4e"), pendingRequest("77aa00bb11cc")
	tampered.Approvers = []string{"arn:aws:iam::123456789012:user/carol"}
	tampered.Tampered = "request 3f2a9c1b0d4e names the approvers [carol]\x1b[2J, and its proofs show []"
	unproven.Unproven = "request 77aa00bb11cc names no proof of who asked for it"
	h.m.deps.Requests = &fakeRequests{list: []approval.Request{tampered, unproven}}
	h.press("p")
	h.wantScreen("3f2a9c1b0d4e", "TAMPERED", "77aa00bb11cc", "UNPROVEN")
	if strings.Contains(h.screen(), "1 of 1") {
		t.Errorf("the pane shows the approvals the tampered item claims:\n%s", h.screen())
	}
	h.press("a")
	h.wantScreen("TAMPERED: request 3f2a9c1b0d4e names the approvers [carol]")
	if raw := h.m.Render(); strings.Contains(raw, "\x1b[2J") {
		t.Errorf("the prompt prints the table's text raw:\n%q", raw)
	}
}

// With more pending requests than the screen has rows, the pane scrolls:
// the request under the cursor is always on screen, so a key never
// approves or denies a request the operator cannot see; moving back up
// scrolls back.
func TestRequestsPaneKeepsTheCursorOnScreen(t *testing.T) {
	h, list := newHarness(t, Options{}), manyRequests(40)
	h.m.deps.Requests = &fakeRequests{list: list}
	h.press("p")
	h.wantScreen("› req000000000")
	for i := 1; i < len(list); i++ {
		h.press("down")
		h.wantScreen(fmt.Sprintf("› req%09d", i))
	}
	h.notOnScreen("req000000000")
	for i := len(list) - 2; i >= 0; i-- {
		h.press("up")
		h.wantScreen(fmt.Sprintf("› req%09d", i))
	}
	h.wantScreen("req000000001")
}

// A screen made smaller keeps the cursor's request in sight too.
func TestRequestsPaneKeepsTheCursorOnAShrunkScreen(t *testing.T) {
	h, list := newHarness(t, Options{}), manyRequests(40)
	h.m.deps.Requests = &fakeRequests{list: list}
	h.press("p")
	for range 15 {
		h.press("down")
	}
	h.wantScreen("› req000000015")
	h.send(tea.WindowSizeMsg{Width: 80, Height: 12})
	h.wantScreen("› req000000015")
}

// manyRequests are n pending requests, req000000000 first.
func manyRequests(n int) []approval.Request {
	var list []approval.Request
	for i := range n {
		list = append(list, pendingRequest(fmt.Sprintf("req%09d", i)))
	}
	return list
}
