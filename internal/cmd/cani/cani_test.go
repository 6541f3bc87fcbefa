package cani_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/cani"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// can-i says what the lever command would be told, for whoever asks, and
// changes nothing: allowed without a policy; under four-eyes.cedar a force
// needs one approval for anyone, and only the operator role may break
// the glass.
func TestCanIAsksThePolicyAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	out := e.MustRun(0, "can-i", "breaker.force-open", "openai", "-o", "json").Stdout
	doc := clitest.Decode[cani.Result](t, out)
	if !doc.Allowed || doc.Policy || doc.Decision != "allow" {
		t.Errorf("without a policy: %+v", doc)
	}
	// No policy decided it: an empty list, not null (a script ranges over it).
	if !strings.Contains(out, `"policies": []`) {
		t.Errorf("without a policy, policies is not an empty list:\n%s", out)
	}
	// Without a policy there is no glass to break, as the lever command says.
	if r := e.MustRun(exitcode.Usage, "can-i", "breaker.clear", "openai", "--break-glass"); !strings.Contains(r.Stderr, "nothing needs breaking") {
		t.Errorf("break-glass without a policy: %s", r.Stderr)
	}
	e.MustRun(exitcode.Usage, "breaker", "clear", "openai", "--reason", "x", "--break-glass")
	e.Setenv("KOSHACTL_DEMO_USER", "dana")
	e.MustRun(0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")

	e.Setenv("KOSHACTL_DEMO_USER", "alice")
	r := e.MustRun(exitcode.Error, "can-i", "breaker.force-open", "openai", "--for", "30m")
	if !strings.Contains(r.Stdout, "not alone: breaker.force-open needs 1 approval") || !strings.Contains(r.Stdout, "four-eyes-breakers") {
		t.Errorf("alice's force: %s", r.Stdout)
	}
	doc = clitest.Decode[cani.Result](t, e.MustRun(exitcode.Error, "can-i", "breaker.force-open", "openai", "-o", "json").Stdout)
	if doc.Allowed || doc.Decision != "needs-approval" || doc.Approvals != 1 || !doc.Policy {
		t.Errorf("alice's force -o json: %+v", doc)
	}
	if r := e.MustRun(0, "can-i", "breaker.clear", "openai", "--break-glass"); !strings.HasPrefix(r.Stdout, "yes: permitted by operator-break-glass") {
		t.Errorf("alice's break-glass: %s", r.Stdout)
	}
	e.Setenv("KOSHACTL_DEMO_USER", "bob")
	if r := e.MustRun(exitcode.Error, "can-i", "breaker.clear", "openai", "--break-glass"); !strings.HasPrefix(r.Stdout, "no: no policy permits a break-glass") {
		t.Errorf("bob's break-glass: %s", r.Stdout)
	}
	e.MustRun(0, "can-i", "ratelimit.reset", "agent-1")
	// A freeze is set without asking the policy (it only makes the fleet
	// safer); lifting it needs a second person.
	if r := e.MustRun(0, "can-i", "freeze.set", "fleet"); !strings.HasPrefix(r.Stdout, "yes: freeze.set is never asked of the table's policy") {
		t.Errorf("bob's freeze: %s", r.Stdout)
	}
	if r := e.MustRun(exitcode.Error, "can-i", "freeze.lift", "fleet"); !strings.Contains(r.Stdout, "not alone: freeze.lift needs 1 approval") {
		t.Errorf("bob's lift: %s", r.Stdout)
	}

	// Nothing was asked for, nor changed.
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")
	if r := e.MustRun(0, "request", "list", "--all", "-o", "json"); strings.Contains(r.Stdout, `"id"`) {
		t.Errorf("can-i stored a request: %s", r.Stdout)
	}

	// Bad questions are usage errors.
	if r := e.MustRun(exitcode.Usage, "can-i", "breaker.smash", "openai"); !strings.Contains(r.Stderr, "use one of breaker.clear, breaker.force-open, ") ||
		!strings.Contains(r.Stderr, "freeze.lift, freeze.set, ratelimit.drain") {
		t.Errorf("an unknown action: %s", r.Stderr)
	}
	e.MustRun(exitcode.Usage, "can-i", "breaker.clear", "openai", "--for", "1h")
}
