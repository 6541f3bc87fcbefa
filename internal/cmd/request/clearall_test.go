package request_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// `breaker clear --all` of 63 overrides under four eyes: more than one
// approval applies in one transaction with the proofs it counts
// (approval.MaxTargets), so the clear, asked in chunks as --all always is,
// becomes one request per chunk (45 and 18), each approvable: nothing is
// cleared until approved, every request is printed and announced, and
// another person's approval of each clears its overrides whole, with their
// records. No request is stored that could never be approved.
func TestClearAllOfSixtyThreeUnderFourEyesIsApprovable(t *testing.T) {
	w := newWorld(t)
	deps := make([]string, 63)
	for i := range deps {
		deps[i] = fmt.Sprintf("dep-%02d", i)
	}
	w.as("admin", exitcode.Usage, append([]string{"breaker", "force-open", "--reason", "failover", "--for", "1h", "--allow-unknown"}, deps...)...)
	w.as("admin", 0, append([]string{"breaker", "force-open", "--reason", "failover", "--for", "1h", "--allow-unknown", "--chunked"}, deps...)...)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes on production")

	// Not asked in chunks, more targets than one approval applies is
	// refused before any request is stored, naming the limit and the flag.
	r := w.as("alice", exitcode.Usage, append([]string{"breaker", "clear", "--reason", "incident over"}, deps[:46]...)...)
	for _, want := range []string{"46 overrides", "at most 45", "nothing was stored", "--chunked"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the refusal of 46 targets under four eyes does not say %q:\n%s", want, r.Stderr)
		}
	}
	if reqs := clitest.Decode[struct {
		Requests []any `json:"requests"`
	}](t, w.as("alice", 0, "request", "list", "-o", "json").Stdout).Requests; len(reqs) != 0 {
		t.Fatalf("a refused change stored %d request(s)", len(reqs))
	}

	r = w.as("alice", exitcode.Pending, "breaker", "clear", "--all", "--reason", "incident over", "-o", "json")
	type one struct {
		RequestID      string `json:"request_id"`
		SHA256         string `json:"sha256"`
		Change         string `json:"change"`
		ApproveCommand string `json:"approve_command"`
	}
	doc := clitest.Decode[struct {
		one
		Requests []one `json:"requests"`
	}](t, r.Stdout)
	if len(doc.Requests) != 2 || doc.RequestID != doc.Requests[0].RequestID {
		t.Fatalf("clear --all of 63 under four eyes: %d requests, want 2 (45 and 18), the first on top\n%s\n%s", len(doc.Requests), r.Stdout, r.Stderr)
	}
	for _, id := range []string{doc.Requests[0].RequestID, doc.Requests[1].RequestID} {
		if !strings.Contains(r.Stderr, id) {
			t.Errorf("stderr does not name request %s:\n%s", id, r.Stderr)
		}
	}
	if n := len(overriddenDeps(t, w)); n != 63 {
		t.Fatalf("%d overrides after the requests, want all 63: nothing is cleared before approval", n)
	}
	requested := 0
	for _, ev := range w.rcv.Events(t) {
		if ev.Action == approval.ActionRequestCreate {
			requested++
		}
	}
	if requested != 2 {
		t.Errorf("%d requests announced, want both", requested)
	}
	// The table names both too.
	table := w.as("alice", exitcode.Pending, "breaker", "clear", "--all", "--reason", "incident over, again").Stdout
	if !strings.Contains(table, "The change is 2 requests of at most 45 targets") || strings.Count(table, "koshactl request approve ") != 2 {
		t.Errorf("the table does not show both requests:\n%s", table)
	}

	for i, req := range doc.Requests {
		w.as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256)
		want := 63 - min(45*(i+1), 63)
		if n := len(overriddenDeps(t, w)); n != want {
			t.Fatalf("after approving request %d: %d overrides left, want %d", i+1, n, want)
		}
	}
	cleared := 0
	for _, rec := range w.audit("--action", "breaker.clear", "--limit", "0") {
		if slices.Contains(deps, strings.TrimPrefix(rec.Subject, "breaker#")) && rec.Approval != nil && rec.Approval.Requester == aliceARN {
			cleared++
		}
	}
	if cleared != 63 {
		t.Errorf("%d clear records naming alice's requests, want 63", cleared)
	}
}

// overriddenDeps is the dependencies breaker list shows.
func overriddenDeps(t *testing.T, w *world) []string {
	t.Helper()
	doc := clitest.Decode[struct {
		Items []struct {
			Dependency string `json:"dependency"`
		} `json:"items"`
	}](t, w.as("admin", 0, "breaker", "list", "-o", "json").Stdout)
	var out []string
	for _, it := range doc.Items {
		out = append(out, it.Dependency)
	}
	return out
}
