package request_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// The scenarios of issue 41, each on moto: what a role that may write an
// item (the requester role writes request# items; the operator role
// review# and breaker# items; the admin's policy item by hand) can no
// longer make koshactl believe. Each is refused or flagged, and nothing is
// applied on it.

// table is the world's table, written around koshactl (as a role that
// may write the item would, with its own credentials).
func (w *world) table() *dynamo.Store {
	return dynamo.NewFromConfig(moto.Config(w.T, w.endpoint), "kosha-control")
}

func (w *world) get(pk string) store.Item {
	w.T.Helper()
	it, err := w.table().Get(context.Background(), pk)
	if err != nil {
		w.T.Fatalf("read %s: %v", pk, err)
	}
	return it
}

func (w *world) put(it store.Item) {
	w.T.Helper()
	if err := w.table().Put(context.Background(), it, store.Always()); err != nil {
		w.T.Fatalf("put %s: %v", it.PK(), err)
	}
}

// notForced checks that no override of dep was written.
func (w *world) notForced(dep string) {
	w.T.Helper()
	if r := w.Run("--context", "admin", "breaker", "get", dep); r.Code != exitcode.NotFound {
		w.T.Errorf("%s was forced: %s", dep, r.Stdout)
	}
}

// ask is alice's force-open of dep, a pending request.
func (w *world) ask(dep string, extra ...string) requestResult {
	w.T.Helper()
	r := w.as("alice", exitcode.Pending, append([]string{"breaker", "force-open", dep, "--reason", "provider incident", "--for", "30m", "-o", "json"}, extra...)...)
	return clitest.Decode[requestResult](w.T, r.Stdout)
}

const twoApprovals = `@id("two-approvals")
@approvals("2")
permit (principal, action in [Kosha::Action::"breaker.force-open", Kosha::Action::"breaker.clear"], resource)
when { context.approvals >= 2 };
`

// A requester-role Put names carol among a request's approvers under a
// policy asking two: bob's one approval does not apply it (carol wrote no
// proof of approving), and no record names carol.
func TestPlantedApproversAreNotCounted(t *testing.T) {
	w := newWorld(t)
	file := filepath.Join(t.TempDir(), "two.cedar")
	if err := os.WriteFile(file, []byte(twoApprovals), 0o600); err != nil {
		t.Fatal(err)
	}
	w.as("admin", 0, "policy", "set", file, "--reason", "two approvals")
	req := w.ask("openai")
	it := w.get(approval.RequestPrefix + req.RequestID)
	it["approvers"] = `["arn:aws:sts::123456789012:assumed-role/operator/carol"]`
	w.put(it)
	if r := w.as("bob", exitcode.Mismatch, "request", "approve", req.RequestID, "--sha256", req.SHA256); !strings.Contains(r.Stderr, "disagrees with its proofs") {
		t.Errorf("approval of a request with a planted approver: %s", r.Stderr)
	}
	w.notForced("openai")
	for _, rec := range w.audit() {
		if rec.Approval != nil && strings.Contains(strings.Join(rec.Approval.Approvers, ","), "carol") {
			t.Errorf("record %s names carol, who approved nothing", rec.ID)
		}
	}
	if r := w.Run("--context", "bob", "request", "show", req.RequestID); r.Code != exitcode.Mismatch || !strings.Contains(r.Stdout+r.Stderr, "TAMPERED") {
		t.Errorf("request show of the tampered request: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A request item written without asking, naming alice's operator session
// as its requester (a requester-role Put), is never approved: there is no
// proof that alice asked. Neither is one whose proof of asking is another
// identity's own, claiming alice's session.
func TestForgedRequestIsNotApproved(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	real := w.ask("openai")
	const forgedBy = "arn:aws:sts::123456789012:assumed-role/operator/alice"
	for _, withProof := range []bool{false, true} {
		id := fmt.Sprintf("f0f0f0f0f0f%v", withProof)[:12]
		it := w.get(approval.RequestPrefix + real.RequestID).Clone()
		it[store.PK], it["requester"] = approval.RequestPrefix+id, forgedBy
		delete(it, "proofs")
		if withProof {
			// mallory's own proof (its key her unique id), saying alice's
			// session asked.
			pk := "proof#AROAREQUESTER:mallory#ask#" + forgedBy + "#request#" + id
			exp, _ := it.Int("expires_at")
			w.put(store.Item{store.PK: pk, "writer": forgedBy, "writer_id": "AROAREQUESTER:mallory", "verb": "ask", "subject": "request#" + id,
				"binding": fmt.Sprintf("%s@%d", real.SHA256, exp), "at": w.Clock.Now().UnixMilli()})
			it["proofs"] = `["` + pk + `"]`
		}
		w.put(it)
		if r := w.as("bob", exitcode.Mismatch, "request", "approve", id, "--sha256", real.SHA256); !strings.Contains(r.Stderr, "proof") {
			t.Errorf("approval of forged request %s: %s", id, r.Stderr)
		}
		w.notForced("openai")
	}
}

// A denied request set back to pending by a Put is never approved: its
// deny proof and closed marker stand. Nor is an expired one, set back to
// pending with a later expiry, whether its expiry was marked or not.
func TestClosedRequestIsNotRevived(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	denied := w.ask("openai")
	pending := w.get(approval.RequestPrefix + denied.RequestID)
	w.as("bob", 0, "request", "deny", denied.RequestID, "--reason", "not now")
	w.put(pending)
	w.as("carol", exitcode.Mismatch, "request", "approve", denied.RequestID, "--sha256", denied.SHA256)
	w.notForced("openai")

	for _, marked := range []bool{true, false} {
		expiring := w.ask("core-api", "--request-ttl", "5m")
		it := w.get(approval.RequestPrefix + expiring.RequestID)
		w.Clock.Advance(6 * time.Minute)
		if marked {
			w.Run("--context", "bob", "request", "list") // marks it expired (and lists the revived denied one, tampered)
		}
		it["expires_at"] = w.Clock.Now().Add(time.Hour).UnixMilli()
		w.put(it)
		if r := w.Run("--context", "bob", "request", "approve", expiring.RequestID, "--sha256", expiring.SHA256); r.Code != exitcode.Mismatch {
			t.Errorf("approval of an expired request set back to pending (marked %v): exit %d, want %d\n%s", marked, r.Code, exitcode.Mismatch, r.Stderr)
		}
		w.notForced("core-api")
	}
}

// A change edited after it was asked (other dependencies, a day), its hash
// recomputed, is not approved without a hash: a script must pass the one
// its approver reviewed, and neither the old hash nor the new one applies
// the edited change (the proof of asking binds the old).
func TestEditedChangeIsNotApprovedWithoutItsHash(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	req := w.ask("openai")
	it := w.get(approval.RequestPrefix + req.RequestID)
	ch := approval.Change{Action: "breaker.force-open", Targets: []string{"core-api", "openai"}, Reason: "provider incident", Params: json.RawMessage(`{"for_seconds":86400}`),
		Before: map[string]json.RawMessage{"core-api": json.RawMessage("null"), "openai": json.RawMessage("null")}}
	canon, err := ch.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := ch.Hash()
	it["change"], it["sha256"] = string(canon), hash
	w.put(it)
	if r := w.as("bob", exitcode.Usage, "request", "approve", req.RequestID); !strings.Contains(r.Stderr, "--sha256") {
		t.Errorf("approval without a hash from a script: %s", r.Stderr)
	}
	w.as("bob", exitcode.Mismatch, "request", "approve", req.RequestID, "--sha256", req.SHA256)
	w.as("bob", exitcode.Mismatch, "request", "approve", req.RequestID, "--sha256", hash)
	w.notForced("openai")
	w.notForced("core-api")
}

// An operator-role Put of a break-glass review as acknowledged is no
// acknowledgement: the review stays listed (flagged), and bob can still
// acknowledge it, with its record.
func TestForgedAcknowledgementIsNotOne(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	bg := clitest.Decode[struct {
		Review string `json:"review"`
	}](t, w.as("carol", 0, "breaker", "force-open", "openai", "--reason", "customers down", "--for", "30m", "--break-glass", "-o", "json").Stdout)
	if bg.Review == "" {
		t.Fatal("no review opened")
	}
	it := w.get(approval.ReviewPrefix + bg.Review)
	it["status"], it["acknowledged_by"], it["acknowledged_at"] = "acknowledged", bobARN, w.Clock.Now().UnixMilli()
	w.put(it)
	r := w.Run("--context", "admin", "request", "list", "--reviews")
	if !strings.Contains(r.Stdout, bg.Review) || !strings.Contains(r.Stdout+r.Stderr, "TAMPERED") {
		t.Errorf("a review acknowledged by a Put: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	w.as("bob", 0, "request", "ack", bg.Review, "--reason", "checked with carol")
	if r := w.as("admin", 0, "request", "list", "--reviews"); strings.Contains(r.Stdout, bg.Review) {
		t.Errorf("acknowledged review still listed: %s", r.Stdout)
	}
	acks := 0
	for _, rec := range w.audit("--action", approval.ActionReviewAck) {
		if rec.Actor == bobARN {
			acks++
		}
	}
	if acks != 1 {
		t.Errorf("%d review.ack records by bob, want 1", acks)
	}
}

// The actor of a break-glass change cannot acknowledge it by dropping
// the review's proof of who broke the glass from its item (an
// operator-role Put, naming someone else as its actor): carol's own
// acknowledgement is refused, and the review stays listed, flagged, until
// someone else acknowledges it.
func TestBreakGlassActorCannotHideHerProof(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	bg := clitest.Decode[struct {
		Review string `json:"review"`
	}](t, w.as("carol", 0, "breaker", "force-open", "openai", "--reason", "customers down", "--for", "30m", "--break-glass", "-o", "json").Stdout)
	it := w.get(approval.ReviewPrefix + bg.Review)
	delete(it, "proofs")
	it["actor"] = "arn:aws:sts::123456789012:assumed-role/operator/dave"
	w.put(it)
	if r := w.as("carol", exitcode.Refused, "request", "ack", bg.Review, "--reason", "looks fine to me"); !strings.Contains(r.Stderr, "someone else") {
		t.Errorf("carol acknowledging her own break-glass change: %s", r.Stderr)
	}
	r := w.Run("--context", "admin", "request", "list", "--reviews")
	if !strings.Contains(r.Stdout, bg.Review) || !strings.Contains(r.Stdout+r.Stderr, "TAMPERED") {
		t.Errorf("the review whose proof was dropped: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	w.as("bob", 0, "request", "ack", bg.Review, "--reason", "checked with carol")
}

// The policy in force is the text its newest policy.set proof names: a
// permissive text Put over it (the stale hash kept), or the item deleted,
// approves nothing that needs approval, and audit list --unapproved flags
// it (exit 1).
func TestTamperedOrDeletedPolicyFailsClosed(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	req := w.ask("openai")
	pol := w.get("policy#table")
	pol["text"] = "permit (principal, action, resource);\n"
	w.put(pol)
	if r := w.as("bob", exitcode.Mismatch, "request", "approve", req.RequestID, "--sha256", req.SHA256); !strings.Contains(r.Stderr, "policy") {
		t.Errorf("approval on a tampered policy: %s", r.Stderr)
	}
	w.notForced("openai")
	if r := w.as("admin", exitcode.Error, "audit", "list", "--unapproved"); !strings.Contains(r.Stderr, "policy.set proof") {
		t.Errorf("audit list --unapproved on a tampered policy: %s", r.Stderr)
	}
	if err := w.table().Delete(context.Background(), "policy#table", store.Always()); err != nil {
		t.Fatal(err)
	}
	if r := w.as("bob", exitcode.Mismatch, "request", "approve", req.RequestID, "--sha256", req.SHA256); !strings.Contains(r.Stderr, "has none now") {
		t.Errorf("approval on a deleted policy: %s", r.Stderr)
	}
	w.notForced("openai")
	if r := w.as("admin", exitcode.Error, "audit", "list", "--unapproved"); !strings.Contains(r.Stderr, "deleted") {
		t.Errorf("audit list --unapproved on a deleted policy: %s", r.Stderr)
	}
}

// A claim item planted with the audit indexes' attributes, saying alice
// cleared openai, is listed by no audit read.
func TestPlantedClaimIsNotListed(t *testing.T) {
	w := newWorld(t)
	now := w.Clock.Now()
	w.put(store.Item{store.PK: fmt.Sprintf("audit#claim#%013d#planted", now.UnixMilli()), "time": now.UnixMilli(), "actor": aliceARN,
		"action": "breaker.clear", "subject": "breaker#openai", "context": "alice", "outcome": "ok", "reason": "planted",
		"ix_audit_day": now.UTC().Format("2006-01-02"), "ix_audit_subject": "breaker#openai", "ix_audit_actor": aliceARN})
	for _, args := range [][]string{{"audit", "list"}, {"audit", "list", "--subject", "openai"}, {"audit", "list", "--actor", aliceARN},
		{"audit", "list", "--scan"}} {
		if r := w.as("admin", 0, args...); strings.Contains(r.Stdout, "planted") {
			t.Errorf("koshactl %s listed the claim:\n%s", strings.Join(args, " "), r.Stdout)
		}
	}
}

// A managed_by marker put on an incident override (by an operator-role
// Put) does not make apply clear it: apply clears only what its own
// records say it wrote.
func TestPlantedMarkerIsNotCleared(t *testing.T) {
	w := newWorld(t)
	file := filepath.Join(t.TempDir(), "levers.yaml")
	src := "version: 1\ncontext: alice\nname: maint\nwindows:\n  - {id: ca, dependency: core-api, reason: maintenance, start: " +
		clitest.Epoch.Format("2006-01-02T15:04:05Z") + ", duration: 30m}\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	w.as("alice", 0, "apply", "-f", file)
	marker := w.get("breaker#core-api").Str("managed_by")
	if marker == "" {
		t.Fatal("apply wrote no marker")
	}
	w.as("carol", 0, "breaker", "force-open", "openai", "--reason", "INC-7 provider outage", "--for", "2h")
	it := w.get("breaker#openai")
	it["managed_by"] = marker
	w.put(it)
	w.as("alice", 0, "apply", "-f", file)
	if r := w.Run("--context", "admin", "breaker", "get", "openai"); r.Code != 0 {
		t.Errorf("apply cleared the incident override carrying a planted marker: exit %d", r.Code)
	}
}

// On a terminal without --sha256 the approver is shown the change as read
// and types its hash: a wrong answer approves nothing (exit 7), the right
// one applies it.
func TestApproverConfirmsTheHashAtAPrompt(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	req := w.ask("openai")
	w.TTY = true
	defer func() { w.TTY, w.Stdin = false, "" }()
	w.Stdin = "0123456789ab\n"
	r := w.as("bob", exitcode.Refused, "request", "approve", req.RequestID)
	if !strings.Contains(r.Stderr, "force open openai for 30m") || !strings.Contains(r.Stderr, req.SHA256) {
		t.Errorf("the prompt did not show the change and its hash:\n%s", r.Stderr)
	}
	w.notForced("openai")
	w.Stdin = req.SHA256[:12] + "\n"
	w.as("bob", 0, "request", "approve", req.RequestID)
	if r := w.Run("--context", "admin", "breaker", "get", "openai"); r.Code != 0 {
		t.Errorf("openai not forced after a confirmed approval: exit %d", r.Code)
	}
}
