package iamtest_test

import (
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
	"github.com/kosha-platform/koshactl/internal/proof"
)

// Under every role's generated policy, a principal writes proofs under
// its own unique id alone, of the verbs its role writes: a proof under any
// other identity's id (a user's, another session's of the same role) is
// denied, and so is one under its own id naming another user's ARN. What
// IAM cannot tie (a role session's role name, an ARN of another kind after
// its own id) no reader accepts (proof.ParseKey).
func TestEachRoleWritesItsOwnProofsAlone(t *testing.T) {
	alice := iamtest.Caller{UserID: "AIDAALICE", ARN: "arn:aws:iam::123456789012:user/alice"}
	carol := iamtest.Caller{UserID: "AROAOPERATOR:carol", ARN: "arn:aws:sts::123456789012:assumed-role/operator/carol"}
	bob := iamtest.Caller{UserID: "AIDABOB", ARN: "arn:aws:iam::123456789012:user/bob"}
	dave := iamtest.Caller{UserID: "AROAOPERATOR:dave", ARN: "arn:aws:sts::123456789012:assumed-role/operator/dave"}
	key := func(c iamtest.Caller, verb string) string {
		return proof.Proof{Writer: proof.Writer{ID: c.UserID, Name: c.ARN}, Verb: verb, Kind: proof.KindRequest, Subject: "3f2a9c1b0d4e"}.Key()
	}
	allVerbs := []string{proof.Ask, proof.Approve, proof.Deny, proof.Cancel, proof.Expire, proof.Glass, proof.Ack, proof.Set}
	for _, role := range iam.Roles {
		doc, err := iam.Policy(role, target)
		if err != nil {
			t.Fatal(err)
		}
		e := iamtest.NewEnforcer(string(role))
		e.SetPolicy(&doc)
		e.AddCaller("AKIAALICE", alice)
		e.AddCaller("ASIACAROL", carol)
		writes := map[string]bool{}
		for _, n := range role.Needs() {
			if n.Action == iam.PutItem && n.Transaction && len(n.Prefix) > len(iam.OwnProofs) && n.Prefix[:len(iam.OwnProofs)] == iam.OwnProofs {
				writes[n.Prefix[len(iam.OwnProofs):len(n.Prefix)-1]] = true
			}
		}
		allowed := func(accessKey, pk string) bool {
			reqs, err := iamtest.DynamoDBRequests(target, "TransactWriteItems", transactBody(pk))
			if err != nil {
				t.Fatal(err)
			}
			return e.AuthorizeKey(accessKey, reqs...) == ""
		}
		for _, verb := range allVerbs {
			for _, own := range []struct {
				accessKey string
				c         iamtest.Caller
			}{{"AKIAALICE", alice}, {"ASIACAROL", carol}} {
				if got := allowed(own.accessKey, key(own.c, verb)); got != writes[verb] {
					t.Errorf("%s: %s writing its own %s proof: allowed %v, want %v", role, own.c.ARN, verb, got, writes[verb])
				}
			}
			for _, c := range []struct {
				accessKey, pk, what string
			}{
				{"AKIAALICE", key(bob, verb), "bob's proof"},
				{"AKIAALICE", key(carol, verb), "carol's proof"},
				{"ASIACAROL", key(dave, verb), "dave's proof, of carol's own role"},
				{"ASIACAROL", key(alice, verb), "alice's proof"},
				{"AKIAALICE", key(iamtest.Caller{UserID: alice.UserID, ARN: bob.ARN}, verb), "a proof under its own id naming bob"},
				{"", key(alice, verb), "alice's proof, unsigned by her"},
			} {
				if allowed(c.accessKey, c.pk) {
					t.Errorf("%s: %s: allowed to write %s (%s)", role, c.accessKey, c.what, c.pk)
				}
			}
		}
		if len(writes) > 0 && !slices.ContainsFunc(doc.Statement, func(s iam.Statement) bool { return s.Sid == iam.SidOwnProofs }) {
			t.Errorf("%s writes proofs without the %s statement", role, iam.SidOwnProofs)
		}
	}
	// A federated user (sts:GetFederationToken, by an IAM user holding the
	// approver's policy) is ACCOUNT:NAME, NAME its caller's pick: IAM lets
	// it write, after its own id, a key naming the session of that name in
	// any role.
	fed := iamtest.Caller{UserID: "123456789012:bob", ARN: "arn:aws:sts::123456789012:federated-user/bob"}
	asBob := iamtest.Caller{UserID: fed.UserID, ARN: "arn:aws:sts::123456789012:assumed-role/approver/bob"}
	doc, err := iam.Policy(iam.Approver, target)
	if err != nil {
		t.Fatal(err)
	}
	e := iamtest.NewEnforcer("federated")
	e.SetPolicy(&doc)
	e.AddCaller("ASIAFED", fed)
	reqs, err := iamtest.DynamoDBRequests(target, "TransactWriteItems", transactBody(key(asBob, proof.Approve)))
	if err != nil {
		t.Fatal(err)
	}
	if denied := e.AuthorizeKey("ASIAFED", reqs...); denied != "" {
		t.Errorf("IAM allows a federated user this key; the evaluator denied it: %s", denied)
	}
	// What IAM lets a session write after its own id, a user an
	// assumed-role ARN after its own, and a federated user a session's:
	// no reader takes any for another's.
	for _, pk := range []string{
		key(iamtest.Caller{UserID: carol.UserID, ARN: "arn:aws:sts::123456789012:assumed-role/operator/dave"}, proof.Approve),
		key(iamtest.Caller{UserID: alice.UserID, ARN: carol.ARN}, proof.Approve),
		key(asBob, proof.Approve),
	} {
		if _, err := proof.ParseKey(pk); err == nil {
			t.Errorf("%s is taken for a proof", pk)
		}
	}
}

// A proposer's budget and pending items are its own: under the requester's
// policy (the MCP server's) alice writes hers, in a transaction, and is
// denied bob's, so no identity spends another's budget or coalesces into
// another's request. No other role writes them.
func TestProposersWriteTheirOwnProposalItemsAlone(t *testing.T) {
	alice := iamtest.Caller{UserID: "AIDAALICE", ARN: "arn:aws:iam::123456789012:user/alice"}
	for _, role := range iam.Roles {
		doc, err := iam.Policy(role, target)
		if err != nil {
			t.Fatal(err)
		}
		e := iamtest.NewEnforcer(string(role))
		e.SetPolicy(&doc)
		e.AddCaller("AKIAALICE", alice)
		allowed := func(pk string) bool {
			reqs, err := iamtest.DynamoDBRequests(target, "TransactWriteItems", transactBody(pk))
			if err != nil {
				t.Fatal(err)
			}
			return e.AuthorizeKey("AKIAALICE", reqs...) == ""
		}
		own := slices.Contains(role.Needs(), iam.Need{Action: iam.PutItem, Prefix: iam.OwnProposals, Transaction: true})
		for _, pk := range []string{"proposals#AIDAALICE#budget", "proposals#AIDAALICE#ask#9f86d081884c7d65"} {
			if got := allowed(pk); got != own {
				t.Errorf("%s: alice writing her own %s: allowed %v, want %v", role, pk, got, own)
			}
		}
		for _, pk := range []string{"proposals#AIDABOB#budget", "proposals#AIDABOB#ask#9f86d081884c7d65", "proposals#AIDAALICEX#budget"} {
			if allowed(pk) {
				t.Errorf("%s: alice may write %s", role, pk)
			}
		}
		if role == iam.Requester && !own {
			t.Error("the requester (the MCP server's role) cannot write its proposals' budget")
		}
	}
}
