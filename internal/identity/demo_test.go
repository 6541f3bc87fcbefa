package identity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/proof"
)

// Every demo identity is verified (it can approve), writes proofs under a
// unique id of its own that internal/proof ties to its ARN, is one person
// with no other demo identity, is in its role for the policy, and says
// what it is.
func TestDemoIdentitiesWriteProofsAsVerifiedSessions(t *testing.T) {
	t.Parallel()
	var writers []proof.Writer
	for _, u := range identity.DemoUsers {
		id := u.Identity()
		if !id.Verified() || id.Source != audit.ActorDemo {
			t.Errorf("%s: %+v is not a verified demo identity", u.Name, id)
		}
		w, err := proof.WriterOf(id)
		if err != nil {
			t.Fatalf("%s writes no proof: %v", u.Name, err)
		}
		if _, err := proof.ParseKey(proof.Proof{Writer: w, Verb: proof.Approve, Kind: proof.KindRequest, Subject: "1"}.Key()); err != nil {
			t.Errorf("%s's proof key does not read back: %v", u.Name, err)
		}
		for _, o := range writers {
			if w.SamePerson(o) {
				t.Errorf("%s and %s are one person", w.Name, o.Name)
			}
		}
		writers = append(writers, w)
		if roles := (policy.Actor{ARN: id.Actor, Verified: true}).Roles(); len(roles) != 1 || roles[0] != u.Role {
			t.Errorf("%s's roles = %v, want [%s]", u.Name, roles, u.Role)
		}
		if got, ok := identity.DemoOf(id); !ok || got != u {
			t.Errorf("DemoOf(%s) = %v, %v", u.Name, got, ok)
		}
		if n := u.Notice(); !strings.Contains(n, "not a security boundary") || !strings.Contains(n, u.Name) {
			t.Errorf("%s's notice: %s", u.Name, n)
		}
	}
	// An STS identity of the same ARN is no demo identity.
	sts := identity.DemoUsers[0].Identity()
	sts.Source = audit.ActorSTS
	if _, ok := identity.DemoOf(sts); ok {
		t.Error("DemoOf took an STS identity for a demo one")
	}
}

func TestUnknownDemoUserNamesTheKnownOnes(t *testing.T) {
	t.Parallel()
	_, err := identity.Demo("mallory\x1b[2J")
	if !errors.Is(err, identity.ErrUnknownDemoUser) || !strings.Contains(err.Error(), "alice (operator)") ||
		!strings.Contains(err.Error(), `\x1b`) || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("Demo(unknown) = %v", err)
	}
}
