package request_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The lists index on DynamoDB (read again by key, as the index is
// eventually consistent): the requester's role writes request items
// whole, their index attributes too. A pending request it puts among the
// closed ones is flagged by --all (exit 14) until the admin's store
// migrate puts it back in the open list; one it sets "applied" and takes
// out of the index is placed by migrate among the closed ones, where
// --all flags it: neither reads as decided.
func TestRequestsOutOfTheirPlaceAreFlaggedOnMoto(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	moved, forged := w.ask("openai"), w.ask("core-api")

	it := w.get(approval.RequestPrefix + moved.RequestID)
	it[store.IndexLists.Attr] = approval.ClosedRequests
	w.put(it)
	it = w.get(approval.RequestPrefix + forged.RequestID)
	it["status"], it["decided_by"], it["approvers"] = approval.StatusApplied, "arn:aws:iam::123456789012:user/bob", `["arn:aws:iam::123456789012:user/bob"]`
	delete(it, store.IndexLists.Attr)
	delete(it, store.IndexLists.Sort)
	w.put(it)
	r := w.as("bob", exitcode.Mismatch, "request", "list", "--all")
	if !strings.Contains(r.Stderr, "tampered: request "+moved.RequestID) || !strings.Contains(r.Stderr, approval.ClosedRequests) {
		t.Errorf("request list --all does not flag %s, put among the closed:\n%s\n%s", moved.RequestID, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, forged.RequestID) {
		t.Errorf("request list --all lists %s, out of the index:\n%s", forged.RequestID, r.Stdout)
	}

	if r := w.as("admin", 0, "store", "migrate"); !strings.Contains(r.Stdout, "change requests and reviews: 2 examined, indexed 2") {
		t.Errorf("migrate does not place both:\n%s", r.Stdout)
	}
	r = w.as("bob", exitcode.Mismatch, "request", "list", "--all")
	if !strings.Contains(r.Stderr, "tampered: request "+forged.RequestID) || strings.Contains(r.Stderr, "tampered: request "+moved.RequestID) {
		t.Errorf("request list --all after migrate: want %s flagged, %s back in place:\n%s\n%s", forged.RequestID, moved.RequestID, r.Stdout, r.Stderr)
	}
	if r := w.as("bob", 0, "request", "list"); !strings.Contains(r.Stdout, moved.RequestID) || strings.Contains(r.Stdout, forged.RequestID) {
		t.Errorf("request list after migrate: want %s pending, %s not:\n%s", moved.RequestID, forged.RequestID, r.Stdout)
	}
}
