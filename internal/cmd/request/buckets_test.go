package request_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// fourEyesBuckets needs one approval for every bucket lever, and lets the
// operator role break the glass.
const fourEyesBuckets = `@id("four-eyes-buckets")
permit (
  principal,
  action in [Kosha::Action::"ratelimit.reset", Kosha::Action::"ratelimit.drain", Kosha::Action::"ratelimit.set"],
  resource
)
when { context.approvals >= 1 };

@id("operator-break-glass")
permit (
  principal in Kosha::Role::"operator",
  action in [Kosha::Action::"ratelimit.reset", Kosha::Action::"ratelimit.drain", Kosha::Action::"ratelimit.set"],
  resource
)
when { context.break_glass };
`

type bucketDoc struct {
	Tokens float64 `json:"tokens"`
}

// The bucket levers ask the table's policy like the breaker levers: under
// four eyes, alice's drain becomes a request and drains nothing; she
// cannot approve it; bob's approval drains exactly what she asked for (the
// hold she gave), in one transaction whose records name both; approving
// again changes nothing; break-glass sets at once and leaves a review; and
// none of it is flagged unapproved.
func TestBucketLeversUnderFourEyesOnMoto(t *testing.T) {
	w := newWorld(t)
	file := filepath.Join(t.TempDir(), "four-eyes-buckets.cedar")
	if err := os.WriteFile(file, []byte(fourEyesBuckets), 0o600); err != nil {
		t.Fatal(err)
	}
	w.as("admin", 0, "policy", "set", file, "--reason", "four eyes on buckets")
	tokens := func() float64 {
		return clitest.Decode[bucketDoc](t, w.as("admin", 0, "ratelimit", "get", "agent-1", "-o", "json").Stdout).Tokens
	}

	r := w.as("alice", exitcode.Pending, "ratelimit", "drain", "--create", "agent-1", "--for", "5m", "--reason", "abusive client", "-o", "json")
	req := clitest.Decode[requestResult](t, r.Stdout)
	if req.RequestID == "" || !strings.Contains(r.Stdout, "drain the rate-limit bucket of agent-1 for 5m0s") {
		t.Fatalf("drain under four eyes: %s\n%s", r.Stdout, r.Stderr)
	}
	if got := tokens(); got != 20 {
		t.Fatalf("agent-1 holds %v tokens after a drain that needs approval, want 20 (nothing drained)", got)
	}
	w.as("alice", exitcode.Refused, "request", "approve", req.RequestID, "--sha256", req.SHA256)
	if r := w.as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256[:12]); !strings.Contains(r.Stdout, "Approved and applied") {
		t.Fatalf("bob's approval: %s", r.Stdout)
	}
	if got := tokens(); got != -300 {
		t.Errorf("agent-1 holds %v tokens after the approved 5m drain, want -300", got)
	}
	var drain int
	for _, rec := range w.audit("--action", "ratelimit.drain") {
		drain++
		if rec.Actor != bobARN || rec.Approval == nil || rec.Approval.Requester != aliceARN || rec.Approval.Request != req.RequestID {
			t.Errorf("drain record %+v (approval %+v), want bob's naming alice's request", rec, rec.Approval)
		}
	}
	if drain != 1 {
		t.Errorf("%d drain records, want 1", drain)
	}
	before := len(w.audit())
	if r := w.as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256); !strings.Contains(r.Stdout, "already applied") {
		t.Errorf("second approval: %s", r.Stdout)
	}
	if after := len(w.audit()); after != before {
		t.Errorf("second approval wrote %d records", after-before)
	}

	// A reset is approved as asked, whatever the level is by then.
	req = clitest.Decode[requestResult](t, w.as("alice", exitcode.Pending, "ratelimit", "reset", "agent-1", "--reason", "false positive", "-o", "json").Stdout)
	w.as("carol", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256)
	if got := tokens(); got != 20 {
		t.Errorf("agent-1 holds %v tokens after the approved reset, want 20", got)
	}

	// Break-glass: carol (operator role) sets at once, loudly, with a review;
	// alice (no role) may not.
	w.as("alice", exitcode.Refused, "ratelimit", "set", "--create", "agent-1", "--tokens", "3", "--reason", "x", "--break-glass")
	if r := w.as("carol", 0, "ratelimit", "set", "--create", "agent-1", "--tokens", "3", "--reason", "scraper", "--break-glass"); !strings.Contains(r.Stdout, "BREAK-GLASS") {
		t.Errorf("break-glass set: %s", r.Stdout)
	}
	if got := tokens(); got != 3 {
		t.Errorf("agent-1 holds %v tokens after the break-glass set, want 3", got)
	}
	if r := w.as("admin", 0, "request", "list", "--reviews"); !strings.Contains(r.Stdout, "ratelimit.set") {
		t.Errorf("open reviews: %s", r.Stdout)
	}
	for _, rec := range w.audit() {
		if rec.Unapproved {
			t.Errorf("%s %s flagged unapproved", rec.Action, rec.Subject)
		}
	}
	loud := false
	for _, ev := range w.rcv.Events(t) {
		loud = loud || ev.Action == "ratelimit.set" && strings.Contains(ev.Detail, "BREAK-GLASS")
	}
	if !loud {
		t.Error("no notification said BREAK-GLASS for the set")
	}
}
