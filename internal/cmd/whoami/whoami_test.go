package whoami_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/whoami"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// On the embedded default: the asserted name, unverified, in no role, with
// how to try four eyes; as a demo identity: verified, its role, said to be
// a demonstration (on stdout and once on stderr).
func TestWhoamiOnTheLocalContext(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(0, "whoami")
	for _, want := range []string{"Identity:  tester@test", "Verified:  no: asserted", "Roles:     none", "Context:   local (the built-in default",
		"Store:     sqlite ", "KOSHACTL_DEMO_USER=bob"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("whoami lacks %q:\n%s", want, r.Stdout)
		}
	}
	out := e.MustRun(0, "whoami", "-o", "json").Stdout
	if !strings.Contains(out, `"roles": []`) {
		t.Errorf("whoami -o json in no role: want \"roles\": [], a list a script can iterate, not null:\n%s", out)
	}
	doc := clitest.Decode[whoami.Result](t, out)
	if doc.Kind != "Identity" || doc.Verified || doc.Source != "unverified" || len(doc.Roles) != 0 || doc.Context != "local" || doc.ContextSource != "default" {
		t.Errorf("whoami -o json: %+v", doc)
	}

	e.Setenv("KOSHACTL_DEMO_USER", "bob")
	r = e.MustRun(0, "whoami", "-o", "json")
	doc = clitest.Decode[whoami.Result](t, r.Stdout)
	if !doc.Verified || doc.Source != "demo" || doc.Actor != "arn:aws:sts::000000000000:assumed-role/approver/bob" ||
		doc.UserID != "AROADEMOAPPROVER:bob" || len(doc.Roles) != 1 || doc.Roles[0] != "approver" || !strings.Contains(doc.Note, "may pick any demo identity") {
		t.Errorf("whoami as bob: %+v", doc)
	}
	if strings.Count(r.Stderr, "not a security boundary") != 1 {
		t.Errorf("a demo identity's command says what it is once on stderr: %q", r.Stderr)
	}
	if r := e.MustRun(0, "whoami"); !strings.Contains(r.Stdout, "Verified:   as a demo identity of the local context: a demonstration, not a security boundary") {
		t.Errorf("whoami as bob:\n%s", r.Stdout)
	}
}

// A demo identity nobody has, or one on a context that is not local, is
// refused before anything is read: one line naming the fix.
func TestDemoIdentityRefusals(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.Setenv("KOSHACTL_DEMO_USER", "mallory")
	if r := e.MustRun(exitcode.Usage, "whoami"); !strings.Contains(r.Stderr, "alice (operator), bob (approver)") ||
		strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("an unknown demo identity: %q", r.Stderr)
	}
	e.MustRun(exitcode.Usage, "breaker", "force-open", "openai", "--reason", "x")
	e.MustRun(exitcode.NotFound, "breaker", "get", "openai")

	e.Setenv("KOSHACTL_DEMO_USER", "bob")
	e.WriteConfig("current-context: dev\ncontexts:\n  dev:\n    store:\n      dynamodb:\n        table: kosha-control\n        region: eu-west-1\n" +
		"        endpoint-url: http://127.0.0.1:1\n        static-credentials: true\n")
	if r := e.MustRun(exitcode.Usage, "whoami"); !strings.Contains(r.Stderr, `context "dev" is not local`) {
		t.Errorf("a demo identity on a DynamoDB context: %q", r.Stderr)
	}
}
