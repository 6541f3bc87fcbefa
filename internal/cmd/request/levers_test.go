package request_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Levers as code under four eyes: a window is applied only with its
// approved request, which binds its exact content; the record names the
// requester, the approver and who applied it; an edit after the approval
// is not applied.
func TestLeversWindowNeedsItsApprovalOnMoto(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes on production")
	file := filepath.Join(t.TempDir(), "levers.yaml")
	write := func(reason string) {
		src := "version: 1\ncontext: alice\nname: maint\nwindows:\n  - {id: oa, dependency: openai, reason: " + reason +
			", start: " + clitest.Epoch.Format("2006-01-02T15:04:05Z") + ", duration: 30m}\n"
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("provider maintenance")

	// Without its request: nothing forced, exit 12 naming the way.
	if r := w.as("alice", exitcode.Pending, "apply", "-f", file); !strings.Contains(r.Stderr, "apply -f FILE --request") ||
		!regexp.MustCompile(`it will be request w[0-9a-f]{11}`).MatchString(r.Stderr) ||
		strings.Contains(r.Stdout, "as it plans") || !strings.Contains(r.Stdout, "Nothing applied: the table's policy holds back") ||
		!strings.Contains(r.Stdout, "apply -f '"+file+"' --request") {
		t.Errorf("apply without a request: %s\n%s", r.Stdout, r.Stderr)
	}
	w.as("alice", exitcode.NotFound, "breaker", "get", "openai")

	// alice asks; asking again finds the same request.
	r := w.as("alice", exitcode.Pending, "apply", "-f", file, "--request")
	id := regexp.MustCompile(`requested as (w[0-9a-f]{11}), pending`).FindStringSubmatch(r.Stdout)
	if id == nil {
		t.Fatalf("apply --request: %s\n%s", r.Stdout, r.Stderr)
	}
	if again := w.as("alice", exitcode.Pending, "apply", "-f", file, "--request"); !strings.Contains(again.Stdout, "already requested as "+id[1]) {
		t.Errorf("asking again: %s", again.Stdout)
	}
	// bob approves the hash he reviewed: that applies nothing by itself.
	shown := clitest.Decode[requestResult](t, w.as("bob", 0, "request", "show", id[1], "-o", "json").Stdout)
	approved := w.as("bob", 0, "request", "approve", id[1], "--sha256", shown.SHA256)
	if strings.Contains(approved.Stdout, "drill") || !strings.Contains(approved.Stdout, "apply may now force window oa of levers maint") {
		t.Errorf("approving a levers window says: %s", approved.Stdout)
	}
	w.as("alice", exitcode.NotFound, "breaker", "get", "openai")

	// Now apply forces it, and the record names alice, bob and who applied.
	w.as("alice", 0, "apply", "-f", file)
	got := w.as("admin", 0, "breaker", "get", "openai", "-o", "json").Stdout
	if !strings.Contains(got, `"managed_by"`) || !strings.Contains(got, "provider maintenance") {
		t.Fatalf("override after apply: %s", got)
	}
	var found bool
	for _, rec := range w.audit() {
		if rec.Action == "breaker.force-open" && rec.Approval != nil && rec.Approval.Request == id[1] {
			found = true
			if rec.Actor != aliceARN || rec.Approval.Requester != aliceARN || len(rec.Approval.Approvers) != 1 || rec.Approval.Approvers[0] != bobARN {
				t.Errorf("the force's record: actor %s, approval %+v", rec.Actor, rec.Approval)
			}
		}
	}
	if !found {
		t.Fatal("no force record carries the window's approved request")
	}

	// Edited after the approval: another request; the old one applies
	// nothing, and the override stays as approved.
	write("provider maintenance (extended)")
	if r := w.as("alice", exitcode.Pending, "apply", "-f", file); !strings.Contains(r.Stderr, "no request for it as it is now") {
		t.Errorf("apply of the edited window: %s", r.Stderr)
	}
	if got := w.as("admin", 0, "breaker", "get", "openai", "-o", "json").Stdout; strings.Contains(got, "extended") {
		t.Errorf("the edited window was applied on the old approval: %s", got)
	}

	// A request item another role wrote approved (a requester-only role may
	// write request# items): alice asks for the edited window, then writes
	// its item approved by bob herself. apply refuses it (no approver's
	// proof shows it: the item disagrees with its proofs, exit 14) and
	// forces nothing.
	r = w.as("alice", exitcode.Pending, "apply", "-f", file, "--request")
	forged := regexp.MustCompile(`requested as (w[0-9a-f]{11}), pending`).FindStringSubmatch(r.Stdout)
	if forged == nil {
		t.Fatalf("apply --request of the edited window: %s", r.Stdout)
	}
	st := dynamo.NewFromConfig(moto.Config(t, w.endpoint), "kosha-control")
	it, err := st.Get(context.Background(), "request#"+forged[1])
	if err != nil {
		t.Fatal(err)
	}
	it["status"], it["approvers"], it["decided_by"] = "approved", `["`+bobARN+`"]`, bobARN
	if err := st.Put(context.Background(), it, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if r := w.as("alice", exitcode.Mismatch, "apply", "-f", file); !strings.Contains(r.Stderr, "disagrees with its proofs") {
		t.Errorf("apply with a forged approval: %s", r.Stderr)
	}
	if got := w.as("admin", 0, "breaker", "get", "openai", "-o", "json").Stdout; strings.Contains(got, "extended") {
		t.Errorf("a forged approval applied the window: %s", got)
	}
	// Asking is recorded where a requester-only role may write: under
	// audit#rq#, never where an approver's record is.
	for _, rec := range w.audit() {
		if rec.Action == "request.create" && !rec.Asked {
			t.Errorf("request.create record %s is not a record of asking", rec.ID)
		}
	}
}
