package list_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestSubjectWithoutKind: a subject is KIND#NAME, so a bare dependency name
// used to list nothing and exit 0 while the record was there. It is read as
// the dependency's override (said on stderr); a name that is no dependency
// name, or a near miss of a known one, is refused with the suggestion.
func TestSubjectWithoutKind(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "core-api", "--reason", "drill", "--for", "30m")

	r := e.Run("audit", "list", "--subject", "core-api", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("audit list --subject core-api: exit %d: %s", r.Code, r.Stderr)
	}
	doc := clitest.Decode[struct {
		Items []struct{ Subject string }
	}](t, r.Stdout)
	if len(doc.Items) != 1 || doc.Items[0].Subject != "breaker#core-api" {
		t.Errorf("audit list --subject core-api listed %+v, want the record of breaker#core-api", doc.Items)
	}
	if want := "note: --subject core-api read as breaker#core-api"; !strings.Contains(r.Stderr, want) || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("stderr = %q, want one line containing %q", r.Stderr, want)
	}

	for _, tc := range []struct{ subject, want string }{
		{"Core-API", "did you mean breaker#core-api?"},
		{"core_api", "did you mean breaker#core-api?"},
		{"core-apj", "this context knows no dependency core-apj (did you mean breaker#core-api?)"},
		{"Agent 1", "give KIND#NAME, like breaker#openai or rl#agent-1"},
	} {
		r := e.Run("audit", "list", "--subject", tc.subject)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || r.Stdout != "" {
			t.Errorf("audit list --subject %q: exit %d, stderr %q, stdout %q; want exit 2 saying %q", tc.subject, r.Code, r.Stderr, r.Stdout, tc.want)
		}
	}
	// Subjects with a kind and patterns are taken as they are.
	for _, subject := range []string{"breaker#core-api", "breaker#*"} {
		r := e.Run("audit", "list", "--subject", subject, "-o", "json")
		if r.Code != 0 || strings.Contains(r.Stderr, "note:") || !strings.Contains(r.Stdout, "breaker#core-api") {
			t.Errorf("audit list --subject %s: exit %d, stderr %q", subject, r.Code, r.Stderr)
		}
	}
}
