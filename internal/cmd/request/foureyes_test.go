package request_test

import (
	"context"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// operatorSession makes the IAM role "operator" and returns creds of
// who's session in it (arn:aws:sts::...:assumed-role/operator/<who>).
func operatorSession(t *testing.T, endpoint string, who aws.Credentials, session string) aws.Credentials {
	t.Helper()
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sts:AssumeRole"}]}`
	moto.Query(t, endpoint, "iam", moto.Root, url.Values{"Action": {"CreateRole"}, "RoleName": {"operator"}, "AssumeRolePolicyDocument": {trust}, "Version": {"2010-05-08"}})
	b := moto.Query(t, endpoint, "sts", who, url.Values{"Action": {"AssumeRole"}, "RoleArn": {"arn:aws:iam::123456789012:role/operator"},
		"RoleSessionName": {session}, "Version": {"2011-06-15"}})
	return aws.Credentials{AccessKeyID: moto.Tag(t, b, "AccessKeyId"), SecretAccessKey: moto.Tag(t, b, "SecretAccessKey"), SessionToken: moto.Tag(t, b, "SessionToken")}
}

// world is one moto server with two IAM users, alice and bob, each with a
// context of their own (profiles in a shared credentials file), a local
// context (unverified), and a webhook receiving the notifications.
type world struct {
	*clitest.Env
	endpoint string
	rcv      *notifytest.Receiver
}

func newWorld(t *testing.T) *world {
	endpoint := moto.Start(t)
	e := clitest.New(t) // profiles come from the process environment: not parallel
	alice, bob := moto.User(t, endpoint, "alice"), moto.User(t, endpoint, "bob")
	carol := operatorSession(t, endpoint, moto.User(t, endpoint, "carol"), "carol")
	moto.UseProfiles(t, t.Setenv, map[string]aws.Credentials{"alice": alice, "bob": bob, "carol": carol, "admin": moto.User(t, endpoint, "admin")})
	rcv := notifytest.Start(t, notifytest.Accept)
	var cfg strings.Builder
	cfg.WriteString("current-context: admin\ncontexts:\n")
	for _, name := range []string{"alice", "bob", "carol", "admin"} {
		fmt.Fprintf(&cfg, "  %s:\n    store:\n      dynamodb:\n        table: kosha-control\n        region: %s\n        endpoint-url: %s\n        profile: %s\n"+
			"    dependencies: [openai, core-api]\n    notify:\n      - webhook:\n          url: %s\n", name, moto.Region, endpoint, name, rcv.URL())
	}
	fmt.Fprintf(&cfg, "  static:\n    store:\n      dynamodb:\n        table: kosha-control\n        region: %s\n        endpoint-url: %s\n        static-credentials: true\n", moto.Region, endpoint)
	e.WriteConfig(cfg.String())
	e.MustRun(0, "store", "init")
	return &world{Env: e, endpoint: endpoint, rcv: rcv}
}

func (w *world) as(who string, want int, args ...string) clitest.Result {
	w.T.Helper()
	return w.MustRun(want, append([]string{"--context", who}, args...)...)
}

type records struct {
	Items []audit.Record `json:"items"`
}

func (w *world) audit(args ...string) []audit.Record {
	w.T.Helper()
	return clitest.Decode[records](w.T, w.as("admin", 0, append([]string{"audit", "list", "--scan", "-o", "json"}, args...)...).Stdout).Items
}

type requestResult struct {
	RequestID string `json:"request_id"`
	SHA256    string `json:"sha256"`
}

const aliceARN, bobARN = "arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/bob"

func TestFourEyesOnMoto(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes on production")

	// alice's force-open creates a request and forces nothing.
	r := w.as("alice", exitcode.Pending, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m", "-o", "json")
	req := clitest.Decode[requestResult](t, r.Stdout)
	if req.RequestID == "" || !strings.Contains(r.Stderr, "koshactl request approve "+req.RequestID) {
		t.Fatalf("force-open under four-eyes: %s\n%s", r.Stdout, r.Stderr)
	}
	w.as("alice", exitcode.NotFound, "breaker", "get", "openai")

	// alice cannot approve it; neither can an unverified context.
	if r := w.as("alice", exitcode.Refused, "request", "approve", req.RequestID, "--sha256", req.SHA256); !strings.Contains(r.Stderr, "cannot approve it") {
		t.Errorf("self-approval: %s", r.Stderr)
	}
	if r := w.as("static", exitcode.Auth, "request", "approve", req.RequestID, "--sha256", req.SHA256); strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 ||
		!strings.Contains(r.Stderr, "not verified") {
		t.Errorf("unverified approval: %q", r.Stderr)
	}
	w.as("bob", exitcode.NotFound, "request", "approve", "000000000000", "--sha256", "0123456789ab")
	w.as("bob", exitcode.Mismatch, "request", "approve", req.RequestID, "--sha256", "0123456789ab")
	w.as("alice", exitcode.NotFound, "breaker", "get", "openai")

	// bob's approval forces it, in one transaction, and the record names both.
	w.as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256[:12])
	got := w.as("admin", 0, "breaker", "get", "openai", "-o", "json").Stdout
	if !strings.Contains(got, aliceARN) {
		t.Errorf("override after approval names the requester? %s", got)
	}
	// Who approved it is shown beside who asked.
	if got := w.as("admin", 0, "breaker", "get", "openai").Stdout; !strings.Contains(got, "Approval:    approved by "+bobARN+" (request "+req.RequestID+", requested by "+aliceARN+")") {
		t.Errorf("breaker get after an approved force does not name its approver:\n%s", got)
	}
	var force *audit.Record
	for _, rec := range w.audit() {
		if rec.Action == "breaker.force-open" {
			force = &rec
		}
	}
	if force == nil || force.Actor != bobARN || force.ActorSource != audit.ActorSTS || force.Approval == nil ||
		force.Approval.Requester != aliceARN || len(force.Approval.Approvers) != 1 || force.Approval.Approvers[0] != bobARN ||
		force.Approval.Request != req.RequestID {
		t.Fatalf("force record %+v (approval %+v), want bob's naming alice and bob", force, force.Approval)
	}
	// The request item was written by that same change.
	show := w.as("bob", 0, "request", "show", req.RequestID, "-o", "json").Stdout
	if !strings.Contains(show, `"status": "applied"`) || !strings.Contains(show, force.Change) {
		t.Errorf("request after approval: %s (change %s)", show, force.Change)
	}

	// bob approving again changes nothing.
	before := len(w.audit())
	if r := w.as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256); !strings.Contains(r.Stdout, "already applied") {
		t.Errorf("second approval: %s", r.Stdout)
	}
	if after := len(w.audit()); after != before {
		t.Errorf("second approval wrote %d records", after-before)
	}

	// An expired request cannot be approved.
	r = w.as("alice", exitcode.Pending, "breaker", "clear", "openai", "--reason", "provider recovered", "--request-ttl", "5m", "-o", "json")
	expiring := clitest.Decode[requestResult](t, r.Stdout)
	w.Clock.Advance(6 * time.Minute)
	// The first listing that sees it expired marks it so and announces it;
	// the listings and the approval after it announce nothing more.
	if r := w.as("alice", 0, "request", "list"); strings.Contains(r.Stdout, expiring.RequestID) {
		t.Errorf("an expired request listed as pending:\n%s", r.Stdout)
	}
	if r := w.as("bob", 0, "request", "show", expiring.RequestID, "-o", "json"); !strings.Contains(r.Stdout, `"status": "expired"`) {
		t.Errorf("request show of the expired request: %s", r.Stdout)
	}
	expiries := func() (events, recs int) {
		for _, ev := range w.rcv.Events(t) {
			if ev.Action == approval.ActionRequestExpire {
				events++
			}
		}
		for _, rec := range w.audit("--action", approval.ActionRequestExpire) {
			if rec.Subject == approval.RequestPrefix+expiring.RequestID && rec.Actor == aliceARN {
				recs++
			}
		}
		return events, recs
	}
	if ev, recs := expiries(); ev != 1 || recs != 1 {
		t.Errorf("after listing the expired request: %d expiry notifications and %d records by alice, want 1 and 1", ev, recs)
	}
	if r := w.as("bob", exitcode.Closed, "request", "approve", expiring.RequestID, "--sha256", expiring.SHA256); !strings.Contains(r.Stderr, "expired") {
		t.Errorf("expired approval: %s", r.Stderr)
	}
	w.as("admin", 0, "breaker", "get", "openai")
	w.as("bob", exitcode.Closed, "request", "approve", expiring.RequestID, "--sha256", expiring.SHA256)
	if ev, recs := expiries(); ev != 1 || recs != 1 {
		t.Errorf("after approving the expired request: %d expiry notifications and %d records by alice, want still 1 and 1", ev, recs)
	}

	// A denied request can never be applied.
	r = w.as("alice", exitcode.Pending, "breaker", "clear", "openai", "--reason", "provider recovered", "-o", "json")
	denied := clitest.Decode[requestResult](t, r.Stdout)
	w.as("bob", 0, "request", "deny", denied.RequestID, "--reason", "not yet")
	w.as("bob", exitcode.Closed, "request", "approve", denied.RequestID, "--sha256", denied.SHA256)

	// Break-glass: carol (operator role) clears at once, loudly, with a review.
	r = w.as("carol", 0, "breaker", "clear", "openai", "--reason", "customers down", "--break-glass")
	if !strings.Contains(r.Stdout, "BREAK-GLASS") {
		t.Errorf("break-glass output: %s", r.Stdout)
	}
	w.as("admin", exitcode.NotFound, "breaker", "get", "openai")
	reviews := w.as("admin", 0, "request", "list", "--reviews").Stdout
	if !strings.Contains(reviews, "breaker.clear") || !strings.Contains(reviews, "customers down") {
		t.Errorf("open reviews: %s", reviews)
	}
	loud := false
	for _, ev := range w.rcv.Events(t) {
		loud = loud || strings.Contains(ev.Detail, "BREAK-GLASS")
	}
	if !loud {
		t.Error("no notification said BREAK-GLASS")
	}
	// alice (no role) may not break the glass.
	w.as("alice", exitcode.Refused, "breaker", "force-open", "openai", "--reason", "x", "--break-glass")
	id := regexp.MustCompile(`(?m)^([0-9a-f]{12})\s+open`).FindStringSubmatch(reviews)
	if id == nil {
		t.Fatalf("no review id in %s", reviews)
	}
	w.as("carol", exitcode.Refused, "request", "ack", id[1])
	w.as("bob", 0, "request", "ack", id[1], "--reason", "checked with carol")
	if r := w.as("admin", 0, "request", "list", "--reviews"); strings.Contains(r.Stdout, id[1]) {
		t.Errorf("acknowledged review still listed: %s", r.Stdout)
	}
	// --all lists the closed ones too, from the lists index: the
	// acknowledged review, the denied request.
	if r := w.as("admin", 0, "request", "list", "--reviews", "--all"); !regexp.MustCompile(`(?m)^` + id[1] + `\s+acknowledged`).MatchString(r.Stdout) {
		t.Errorf("--reviews --all does not list the acknowledged review %s: %s", id[1], r.Stdout)
	}
	if r := w.as("admin", 0, "request", "list", "--all"); !regexp.MustCompile(`(?m)^` + denied.RequestID + `\s+denied`).MatchString(r.Stdout) {
		t.Errorf("--all does not list the denied request %s: %s", denied.RequestID, r.Stdout)
	}

	// A direct write without a request (the static context lacks koshactl's
	// policy check? no: a writer that bypasses it) is flagged.
	bypass(t, w)
	var flagged int
	for _, rec := range w.audit() {
		if rec.Unapproved {
			flagged++
		}
	}
	if flagged != 1 {
		t.Errorf("%d records flagged unapproved, want the one bypass", flagged)
	}
	if r := w.as("admin", 0, "audit", "list"); !strings.Contains(r.Stdout, "UNAPPROVED") {
		t.Errorf("audit list does not mark the bypass:\n%s", r.Stdout)
	}
	// The scheduled detection lists the bypass alone (not bob's approved
	// force, not carol's break-glass clear), exits 1, and announces it once.
	r = w.as("admin", exitcode.Error, "audit", "list", "--unapproved", "--notify", "-o", "json")
	found := clitest.Decode[records](t, r.Stdout).Items
	if len(found) != 1 || found[0].Actor != "old-koshactl@host" || found[0].Subject != "breaker#core-api" {
		t.Fatalf("audit list --unapproved: %+v, want the bypass alone", found)
	}
	var announced []string
	for _, ev := range w.rcv.Events(t) {
		if ev.Action == notify.ActionPolicyBypassed {
			announced = append(announced, strings.Join(ev.AuditIDs, ","))
		}
	}
	if strings.Join(announced, " ") != found[0].ID {
		t.Errorf("policy.bypassed announced for %v, want once for %s", announced, found[0].ID)
	}

	// Notifications announced requested, approved, denied, expired and break-glass.
	var actions []string
	for _, ev := range w.rcv.Events(t) {
		actions = append(actions, ev.Action+"/"+ev.Outcome)
	}
	for _, want := range []string{approval.ActionRequestCreate + "/pending", "breaker.force-open/applied", approval.ActionRequestDeny + "/denied",
		approval.ActionRequestExpire + "/expired", "breaker.clear/break-glass", "policy.set/"} {
		found := false
		for _, a := range actions {
			found = found || a == want
		}
		if !found {
			t.Errorf("no notification %s among %v", want, actions)
		}
	}
}

// Two approvers racing for 20 rounds apply each request once.
func TestRacingApproversApplyOnce(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	for round := range 20 {
		args := []string{"breaker", "force-open", "openai", "--reason", fmt.Sprintf("round %d", round), "--overwrite", "-o", "json"}
		if round%2 == 1 {
			args = []string{"breaker", "clear", "openai", "--reason", fmt.Sprintf("round %d", round), "-o", "json"}
		}
		req := clitest.Decode[requestResult](t, w.as("alice", exitcode.Pending, args...).Stdout)
		var wg sync.WaitGroup
		codes := make([]int, 2)
		for i, who := range []string{"bob", "carol"} {
			wg.Go(func() {
				codes[i] = w.Run("--context", who, "request", "approve", req.RequestID, "--sha256", req.SHA256).Code
			})
		}
		wg.Wait()
		if codes[0] != 0 || codes[1] != 0 {
			t.Fatalf("round %d: approvals exited %v, want 0 and 0 (one applies, the other finds it applied)", round, codes)
		}
		n := 0
		for _, rec := range w.audit("--action", "breaker."+args[1]) {
			if rec.Approval != nil && rec.Approval.Request == req.RequestID {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d records of request %s, want 1", round, n, req.RequestID)
		}
	}
}

// bypass forces core-api as a writer that never asks the policy would (an
// older koshactl, another tool holding a role that may write lever items):
// the override and its record, without an approval.
func bypass(t *testing.T, w *world) {
	t.Helper()
	s := dynamo.NewFromConfig(moto.Config(t, w.endpoint), "kosha-control")
	_, _, err := levertest.Force(context.Background(), s, w.Clock, audit.NewLog(s, w.Clock, "old-koshactl"), levertest.Req{Dependency: "core-api", Reason: "no questions asked", Actor: "old-koshactl@host", For: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
}
