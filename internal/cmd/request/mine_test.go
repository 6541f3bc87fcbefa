package request_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

type listed struct {
	Requests []struct {
		ID       string             `json:"id"`
		SHA256   string             `json:"sha256"`
		Comments []approval.Comment `json:"comments"`
	} `json:"requests"`
}

// On the local store, as demo identities: --mine lists what I asked for,
// --waiting-on-me what someone else asked for and I have not approved;
// an approval's comment (one line of plain text) is kept with it and shown.
func TestMineWaitingOnMeAndComments(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	as := func(who string, want int, args ...string) clitest.Result {
		t.Helper()
		e.Setenv("KOSHACTL_DEMO_USER", who)
		return e.MustRun(want, args...)
	}
	ids := func(who string, args ...string) []string {
		t.Helper()
		var out []string
		for _, r := range clitest.Decode[listed](t, as(who, 0, append([]string{"request", "list", "-o", "json"}, args...)...).Stdout).Requests {
			out = append(out, r.ID)
		}
		return out
	}
	as("dana", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	alices := clitest.Decode[requestResult](t, as("alice", exitcode.Pending, "breaker", "force-open", "openai", "--reason", "incident", "-o", "json").Stdout)
	bobs := clitest.Decode[requestResult](t, as("bob", exitcode.Pending, "breaker", "force-open", "core-api", "--reason", "load test", "-o", "json").Stdout)

	for _, tc := range []struct {
		who, flag string
		want      []string
	}{
		{"alice", "--mine", []string{alices.RequestID}},
		{"bob", "--mine", []string{bobs.RequestID}},
		{"carol", "--mine", nil},
		{"alice", "--waiting-on-me", []string{bobs.RequestID}},
		{"bob", "--waiting-on-me", []string{alices.RequestID}},
		{"carol", "--waiting-on-me", []string{bobs.RequestID, alices.RequestID}},
	} {
		got := ids(tc.who, tc.flag)
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: request list %s = %v, want %v", tc.who, tc.flag, got, tc.want)
		}
	}
	if r := as("carol", 0, "request", "list", "--mine"); !strings.Contains(r.Stderr, "No pending change requests of yours.") {
		t.Errorf("carol's empty --mine: %q", r.Stderr)
	}
	if r := as("carol", 0, "request", "list", "--mine", "--all"); !strings.Contains(r.Stderr, "No change requests of yours.") {
		t.Errorf("carol's empty --mine --all: %q", r.Stderr)
	}
	// Nobody unverified is waited on.
	e.Setenv("KOSHACTL_DEMO_USER", "")
	if r := e.MustRun(exitcode.Auth, "request", "list", "--waiting-on-me"); !strings.Contains(r.Stderr, "KOSHACTL_DEMO_USER") {
		t.Errorf("--waiting-on-me unverified: %s", r.Stderr)
	}
	as("bob", exitcode.Usage, "request", "list", "--mine", "--waiting-on-me")

	// The reviewer is shown who asked (a demo identity, said so) and what
	// to run next, with the hash they reviewed.
	if r := as("bob", 0, "request", "show", alices.RequestID); !strings.Contains(r.Stdout,
		"Requester:  arn:aws:sts::000000000000:assumed-role/operator/alice (demo identity of the local context)") ||
		!strings.Contains(r.Stderr, "koshactl request approve "+alices.RequestID+" --sha256 "+alices.SHA256[:12]+" (add --comment TEXT") ||
		!strings.Contains(r.Stderr, "koshactl request deny "+alices.RequestID+" --reason TEXT") {
		t.Errorf("request show of a pending request:\n%s\n%s", r.Stdout, r.Stderr)
	}
	// A comment that is not one line of plain text is refused; a good one
	// is kept in bob's approval and shown, and alice's request waits on
	// bob no more.
	as("bob", exitcode.Usage, "request", "approve", alices.RequestID, "--sha256", alices.SHA256, "--comment", "ok\x1b[2J")
	as("bob", exitcode.Usage, "request", "approve", alices.RequestID, "--sha256", alices.SHA256, "--comment", "provider's status page \u202eagrees")
	approved := as("bob", 0, "request", "approve", alices.RequestID, "--sha256", alices.SHA256, "--comment", "provider's status page agrees")
	if want := "requested by arn:aws:sts::000000000000:assumed-role/operator/alice, approved by arn:aws:sts::000000000000:assumed-role/approver/bob\n"; !strings.Contains(approved.Stdout, want) {
		t.Errorf("the approval says:\n%s\nwant %q", approved.Stdout, want)
	}
	show := as("alice", 0, "request", "show", alices.RequestID)
	if strings.Contains(show.Stderr, "approves it, as shown") {
		t.Errorf("request show of an applied request says how to approve it: %s", show.Stderr)
	}
	if !strings.Contains(show.Stdout, "Comment:     arn:aws:sts::000000000000:assumed-role/approver/bob: provider's status page agrees") {
		t.Errorf("request show after a commented approval:\n%s", show.Stdout)
	}
	if got := ids("bob", "--waiting-on-me"); len(got) != 0 {
		t.Errorf("bob's --waiting-on-me after approving: %v", got)
	}
	all := clitest.Decode[listed](t, as("alice", 0, "request", "list", "--all", "--mine", "-o", "json").Stdout)
	if len(all.Requests) != 1 || len(all.Requests[0].Comments) != 1 || all.Requests[0].Comments[0].Text != "provider's status page agrees" {
		t.Errorf("alice's requests with --all: %+v", all.Requests)
	}
	// What the requester is told names the policies as a list, not a Go slice.
	if r := as("carol", exitcode.Pending, "breaker", "force-open", "screening-sim", "--reason", "load test"); !strings.Contains(r.Stdout,
		"needs 1 approval(s) from someone other than you (four-eyes-breakers).") {
		t.Errorf("carol's force under four eyes says:\n%s", r.Stdout)
	}
}

// --waiting-on-me asks the table's policy, as an approval does, whether it
// would take the caller's approval: here the requester and approver roles
// are permitted a force with one approval and the operator role is not, so
// the agent's request waits on bob and carol, not on alice, whose approval
// is refused.
func TestWaitingOnMeAsksThePolicy(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	as := func(who string, want int, args ...string) clitest.Result {
		t.Helper()
		e.Setenv("KOSHACTL_DEMO_USER", who)
		return e.MustRun(want, args...)
	}
	file := filepath.Join(t.TempDir(), "approvers.cedar")
	if err := os.WriteFile(file, []byte(`@id("asked-and-approved") @approvals("1")
permit (principal in Kosha::Role::"requester", action == Kosha::Action::"breaker.force-open", resource) when { context.approvals >= 1 };
@id("approvers-approve") @approvals("1")
permit (principal in Kosha::Role::"approver", action == Kosha::Action::"breaker.force-open", resource) when { context.approvals >= 1 };
`), 0o600); err != nil {
		t.Fatal(err)
	}
	as("dana", 0, "policy", "set", file, "--reason", "approvers approve")
	req := clitest.Decode[requestResult](t, as("agent", exitcode.Pending, "breaker", "force-open", "openai", "--reason", "agent: timeouts", "-o", "json").Stdout)
	for who, want := range map[string]int{"alice": 0, "bob": 1, "carol": 1, "agent": 0} {
		if got := len(clitest.Decode[listed](t, as(who, 0, "request", "list", "--waiting-on-me", "-o", "json").Stdout).Requests); got != want {
			t.Errorf("%s's --waiting-on-me lists %d requests, want %d", who, got, want)
		}
	}
	if r := as("alice", exitcode.Refused, "request", "approve", req.RequestID, "--sha256", req.SHA256); !strings.Contains(r.Stderr, "may not approve") {
		t.Errorf("alice's approval: %s", r.Stderr)
	}
	as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256)
	if got := clitest.Decode[listed](t, as("carol", 0, "request", "list", "--waiting-on-me", "-o", "json").Stdout).Requests; len(got) != 0 {
		t.Errorf("carol's --waiting-on-me after bob applied it: %+v", got)
	}
}
