package policy_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/policy"
)

func load(t *testing.T, name string) *policy.Set {
	t.Helper()
	text, err := os.ReadFile("../../docs/policies/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := policy.Parse(levers, name, text)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

const (
	alice    = "arn:aws:iam::123456789012:user/alice"
	operator = "arn:aws:sts::123456789012:assumed-role/operator/alice"
	outsider = "arn:aws:sts::999999999999:assumed-role/operator/mallory"
	payments = "arn:aws:iam::123456789012:user/ci/payments-deploy"
)

// The decision table: who, what, where, within which bounds, with how many
// approvals, under the shipped policies.
func TestDecide(t *testing.T) {
	fourEyes, bounded := load(t, "four-eyes.cedar"), load(t, "bounded-overrides.cedar")
	verified := func(arn string) policy.Actor { return policy.Actor{ARN: arn, Verified: true} }
	for _, tc := range []struct {
		name      string
		set       *policy.Set
		req       policy.Request
		want      policy.Outcome
		approvals int
		reason    string
	}{
		{"no policy allows everything", nil,
			policy.Request{Actor: verified(alice), Action: actionForceOpen, Target: "openai", NoExpiry: true}, policy.Allow, 0, "no policy"},
		{"four-eyes: a force needs one approval", fourEyes,
			policy.Request{Actor: verified(alice), Action: actionForceOpen, Target: "openai", Duration: time.Hour}, policy.NeedsApproval, 1, "four-eyes-breakers"},
		{"four-eyes: a clear needs one approval", fourEyes,
			policy.Request{Actor: verified(alice), Action: actionClear, Target: "core-api"}, policy.NeedsApproval, 1, "needs 1 approval"},
		{"four-eyes: lifting the fleet's freeze needs one approval", fourEyes,
			policy.Request{Actor: verified(operator), Action: actionLift, Target: "fleet"}, policy.NeedsApproval, 1, "four-eyes-freeze-lift"},
		{"bounded: an operator lifts the freeze alone", bounded,
			policy.Request{Actor: verified(operator), Action: actionLift, Target: "fleet"}, policy.Allow, 0, "freeze-lifts"},
		{"four-eyes: with the approval it is allowed", fourEyes,
			policy.Request{Actor: verified(alice), Action: actionForceOpen, Target: "openai", Approvals: 1}, policy.Allow, 0, "with 1 approval"},
		{"four-eyes: an unverified requester may still ask", fourEyes,
			policy.Request{Actor: policy.Actor{ARN: "alice@laptop"}, Action: actionForceOpen, Target: "openai"}, policy.NeedsApproval, 1, ""},
		{"four-eyes: break-glass for the operator role", fourEyes,
			policy.Request{Actor: verified(operator), Action: actionForceOpen, Target: "openai", BreakGlass: true}, policy.Allow, 0, "operator-break-glass"},
		{"four-eyes: break-glass refused to a user without the role", fourEyes,
			policy.Request{Actor: verified(alice), Action: actionClear, Target: "openai", BreakGlass: true}, policy.Deny, 0, "no policy permits a break-glass"},
		{"four-eyes: an unverified operator ARN has no role", fourEyes,
			policy.Request{Actor: policy.Actor{ARN: operator}, Action: actionClear, Target: "openai", BreakGlass: true}, policy.Deny, 0, "break-glass"},
		{"four-eyes: a bake puts back its own clear at once", fourEyes,
			policy.Request{Actor: verified(alice), Action: actionRollback, Target: "openai", Duration: 20 * time.Minute, OwnRollback: true},
			policy.Allow, 0, "bake-rollback"},
		{"four-eyes: nobody puts back another's clear", fourEyes,
			policy.Request{Actor: verified(alice), Action: actionRollback, Target: "openai", Duration: 20 * time.Minute}, policy.Deny, 0, "no policy permits"},
		{"bounded: a policy silent on rollbacks denies them", bounded,
			policy.Request{Actor: verified(operator), Action: actionRollback, Target: "openai", OwnRollback: true}, policy.Deny, 0, "no policy permits"},
		{"four-eyes: bucket levers as before", fourEyes,
			policy.Request{Actor: verified(alice), Action: actionDrain, Target: "client-7"}, policy.Allow, 0, "buckets-as-before"},
		{"bounded: an operator's hour is allowed", bounded,
			policy.Request{Actor: verified(operator), Action: actionForceOpen, Target: "openai", Duration: time.Hour}, policy.Allow, 0, "short-forces"},
		{"bounded: two hours need one approval", bounded,
			policy.Request{Actor: verified(operator), Action: actionForceOpen, Target: "openai", Duration: 2 * time.Hour}, policy.NeedsApproval, 1, "long-forces"},
		{"bounded: no expiry needs two", bounded,
			policy.Request{Actor: verified(operator), Action: actionForceOpen, Target: "openai", NoExpiry: true}, policy.NeedsApproval, 2, "forever-forces"},
		{"bounded: no expiry with one approval needs one more", bounded,
			policy.Request{Actor: verified(operator), Action: actionForceOpen, Target: "openai", NoExpiry: true, Approvals: 1}, policy.NeedsApproval, 2, ""},
		{"bounded: a user without the role is denied", bounded,
			policy.Request{Actor: verified(alice), Action: actionForceOpen, Target: "openai", Duration: time.Minute}, policy.Deny, 0, "no policy permits"},
		{"bounded: another account is forbidden", bounded,
			policy.Request{Actor: verified(outsider), Action: actionClear, Target: "openai"}, policy.Deny, 0, "forbidden by own-account-only"},
		{"bounded: payments CI resets its own client", bounded,
			policy.Request{Actor: verified(payments), Action: actionReset, Target: "payments-web"}, policy.Allow, 0, "payments-ci"},
		{"bounded: payments CI may not reset another's client", bounded,
			policy.Request{Actor: verified(payments), Action: actionReset, Target: "search"}, policy.Deny, 0, ""},
		{"bounded: payments CI may not drain", bounded,
			policy.Request{Actor: verified(payments), Action: actionDrain, Target: "payments-web"}, policy.Deny, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := policy.Decide(tc.set, tc.req)
			if d.Outcome != tc.want || d.Approvals != tc.approvals || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("Decide = %v (%d approvals, %q), want %v (%d approvals, reason containing %q)",
					d.Outcome, d.Approvals, d.Reason, tc.want, tc.approvals, tc.reason)
			}
		})
	}
}

func TestParseRefusesWithTheLine(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"syntax", "permit(principal, action, resource)\n  whn { true };", `p.cedar:2: column 7: found "whn" where ";" was expected`}, //nolint:misspell // the misspelling is the test
		{"unknown context attribute", "permit(principal, action, resource)\nwhen { context.nope };", "p.cedar:1: for policy `policy0`, attribute `nope`"},
		{"wrong type", "\n@id(\"x\")\npermit(principal, action, resource) when { context.approvals == \"one\" };", "p.cedar:2: "},
		{"action on the wrong resource", "permit(principal, action == Kosha::Action::\"breaker.clear\", resource is Kosha::Client);", "p.cedar:1: "},
		{"unknown action", "permit(principal, action == Kosha::Action::\"breaker.smash\", resource);", "p.cedar:1: "},
		{"duplicate id", "@id(\"a\") permit(principal, action, resource);\n@id(\"a\") permit(principal, action, resource);", "p.cedar:2: @id(\"a\") is used by the policy at line 1"},
		{"bad approvals", "@approvals(\"many\") permit(principal, action, resource);", "not a count"},
		{"empty", "  \n", "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse(levers, "p.cedar", []byte(tc.text))
			if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse: %v, want one line ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

// A policy that cannot be evaluated for a request (here a forbid whose
// arithmetic overflows) must not be skipped, as Cedar skips an erroring
// policy: the decision fails closed, whatever else permits.
func TestAPolicyThatCannotBeEvaluatedDenies(t *testing.T) {
	t.Parallel()
	text := `permit (principal, action, resource);
forbid (principal, action, resource) when { context.duration_seconds * 9223372036854775807 > 0 };
`
	s, err := policy.Parse(levers, "overflow.cedar", []byte(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	d := policy.Decide(s, policy.Request{Actor: policy.Actor{ARN: alice, Verified: true}, Action: actionForceOpen, Target: "openai", Duration: time.Hour})
	if d.Outcome != policy.Deny || !strings.Contains(d.Reason, "could not be evaluated") {
		t.Errorf("Decide = %+v; want a denial saying the policy could not be evaluated", d)
	}
}
