package proof_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/proof"
)

func TestBound(t *testing.T) {
	for _, c := range []struct {
		uid, arn string
		want     bool
	}{
		{"AIDAALICE", "arn:aws:iam::123456789012:user/alice", true},
		{"AIDAALICE", "arn:aws:iam::123456789012:user/ci/payments-web", true},
		{"AROAOPS:alice", "arn:aws:sts::123456789012:assumed-role/operator/alice", true},
		{"AROAOPS:alice@example.com", "arn:aws-cn:sts::123456789012:assumed-role/AWSReservedSSO_Ops_1a2b/alice@example.com", true},
		// A session's unique id ends with its own session name: mallory's
		// cannot name alice's session.
		{"AROAOPS:mallory", "arn:aws:sts::123456789012:assumed-role/operator/alice", false},
		{"AROAOPS", "arn:aws:sts::123456789012:assumed-role/operator/alice", false},
		{":alice", "arn:aws:sts::123456789012:assumed-role/operator/alice", false},
		// A user's id holds no colon: a session cannot pass for a user.
		{"AROAOPS:alice", "arn:aws:iam::123456789012:user/alice", false},
		// Roles themselves, the root, federated users, other services.
		{"AROAOPS", "arn:aws:iam::123456789012:role/operator", false},
		{"123456789012", "arn:aws:iam::123456789012:root", false},
		{"123456789012:bob", "arn:aws:sts::123456789012:federated-user/bob", false},
		// A federated user's id is ACCOUNT:NAME, NAME its caller's pick
		// (sts:GetFederationToken): it names no role's session, whatever
		// session it claims.
		{"123456789012:bob", "arn:aws:sts::123456789012:assumed-role/approver/bob", false},
		{"AROA:bob", "arn:aws:sts::123456789012:assumed-role/approver/bob", false},
		{"AIDAALICE", "arn:aws:iam::123456789012:user/", false},
		{"AIDAALICE", "alice@host", false},
		{"", "arn:aws:iam::123456789012:user/alice", false},
	} {
		if got := proof.Bound(c.uid, c.arn); got != c.want {
			t.Errorf("Bound(%q, %q) = %v, want %v", c.uid, c.arn, got, c.want)
		}
	}
}

func TestKeyRoundTrips(t *testing.T) {
	at := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	for _, w := range []proof.Writer{
		{ID: "AIDAALICE", Name: "arn:aws:iam::123456789012:user/alice"},
		{ID: "AROAOPS:carol", Name: "arn:aws:sts::123456789012:assumed-role/operator/carol"},
		{ID: proof.Unverified, Name: "ops#1%@host"},
	} {
		p := proof.Proof{Writer: w, Verb: proof.Approve, Kind: proof.KindRequest, Subject: "3f2a9c1b0d4e", Binding: "abc@1", At: at, Final: true,
			Comment: "checked the status page"}
		got, err := proof.FromItem(p.Item("tok"))
		if err != nil {
			t.Fatalf("%+v: %v", w, err)
		}
		if got.Writer != w || got.Verb != p.Verb || got.Subject != p.Subject || got.Binding != p.Binding || !got.At.Equal(at) ||
			!got.Final || got.Change != "tok" || got.Comment != p.Comment {
			t.Errorf("round trip of %+v: %+v", p, got)
		}
	}
}

// A key its writer's id cannot be tied to, with a verb its kind has not,
// or whose attributes say another writer, proves nothing.
func TestMalformedProofs(t *testing.T) {
	for _, pk := range []string{
		"proof#AROAOPS:mallory#ask#arn:aws:sts::123456789012:assumed-role/operator/alice#request#1",
		"proof#AIDAMAL#ask#arn:aws:sts::123456789012:assumed-role/operator/alice#request#1",
		"proof#AIDAALICE#set#arn:aws:iam::123456789012:user/alice#request#1",
		"proof#AIDAALICE#ask#arn:aws:iam::123456789012:user/alice#request",
		"proof#AIDAALICE#ask#arn:aws:iam::123456789012:user/alice#request#1#x",
		"request#1",
	} {
		if _, err := proof.ParseKey(pk); !errors.Is(err, proof.ErrMalformed) {
			t.Errorf("ParseKey(%q): %v, want ErrMalformed", pk, err)
		}
	}
	p := proof.Proof{Writer: proof.Writer{ID: "AIDAALICE", Name: "arn:aws:iam::123456789012:user/alice"}, Verb: proof.Ask,
		Kind: proof.KindRequest, Subject: "1", Binding: "b", At: time.Now()}
	for attr, v := range map[string]any{"writer": "arn:aws:iam::123456789012:user/bob", "writer_id": "AIDABOB", "verb": "approve",
		"subject": "request#2", "binding": ""} {
		it := p.Item("tok")
		it[attr] = v
		if _, err := proof.FromItem(it); !errors.Is(err, proof.ErrMalformed) {
			t.Errorf("a proof whose %s says %v: %v, want ErrMalformed", attr, v, err)
		}
	}
}

func TestWriterOf(t *testing.T) {
	w, err := proof.WriterOf(audit.Identity{Actor: "arn:aws:iam::123456789012:user/alice", Source: audit.ActorSTS, UserID: "AIDAALICE"})
	if err != nil || w.ID != "AIDAALICE" || !w.Verified() {
		t.Errorf("an IAM user: %+v, %v", w, err)
	}
	if w, err := proof.WriterOf(audit.Identity{Actor: "ops@host", Source: audit.ActorUnverified}); err != nil || w.Verified() || w.Name != "ops@host" {
		t.Errorf("an asserted actor: %+v, %v", w, err)
	}
	for _, id := range []audit.Identity{
		{Actor: "arn:aws:iam::123456789012:user/alice", Source: audit.ActorSTS},
		{Actor: "arn:aws:iam::123456789012:root", Source: audit.ActorSTS, UserID: "123456789012"},
		{Actor: "arn:aws:iam::123456789012:user/a#b", Source: audit.ActorSTS, UserID: "AIDAX"},
	} {
		if w, err := proof.WriterOf(id); err == nil {
			t.Errorf("%+v: writer %+v, want an error", id, w)
		}
	}
}

// One person is one principal, or verified principals of one name: an
// IAM user and the sessions pinned to its name, in any role.
func TestSamePerson(t *testing.T) {
	user := proof.Writer{ID: "AIDAALICE", Name: "arn:aws:iam::123456789012:user/ops/alice"}
	for _, c := range []struct {
		o    proof.Writer
		want bool
	}{
		{user, true},
		{proof.Writer{ID: "AROAOPS:alice", Name: "arn:aws:sts::123456789012:assumed-role/operator/alice"}, true},
		{proof.Writer{ID: "AROAAPP:Alice", Name: "arn:aws:sts::123456789012:assumed-role/approver/Alice"}, true},
		{proof.Writer{ID: "AROAAPP:bob", Name: "arn:aws:sts::123456789012:assumed-role/approver/bob"}, false},
		{proof.Writer{ID: "AROAAPP:malice", Name: "arn:aws:sts::123456789012:assumed-role/approver/malice"}, false},
		{proof.Writer{ID: proof.Unverified, Name: "alice"}, false},
	} {
		if got := user.SamePerson(c.o); got != c.want {
			t.Errorf("%s and %s one person: %v, want %v", user.Name, c.o.Name, got, c.want)
		}
	}
}
