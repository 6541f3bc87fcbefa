package kinds

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// A drill step's unknown dependency gets the same suggestion as the command
// line (breaker.ClosestDependency: separators ignored, within two edits), not a
// looser rule of its own.
func TestCheckDependencySuggestsByTheCommandsRule(t *testing.T) {
	rc := &runtime.RunContext{Deps: &runtime.Deps{ContextName: "dev", KnownDependencies: []string{"core-api", "openai"}}}
	for _, c := range []struct{ dep, want string }{
		{"o-p-e-n-a-i", `(did you mean "openai"?)`}, // five hyphens: zero edits once separators are ignored
		{"open-ai", `(did you mean "openai"?)`},
		{"postgres", `knows core-api, openai (set allow_unknown`}, // nothing close: no suggestion
	} {
		err := checkDependency(rc, c.dep, false)
		if err == nil {
			t.Fatalf("checkDependency(%q) = nil; want an unknown-dependency error", c.dep)
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), `unknown dependency "`+c.dep+`": context "dev" knows`) {
			t.Errorf("checkDependency(%q) = %v; want %q", c.dep, err, c.want)
		}
		// The suggestion is the command line's, word for word.
		if cli := breaker.ClosestDependency(c.dep, rc.Deps.KnownDependencies); cli != "" && !strings.Contains(err.Error(), `(did you mean "`+cli+`"?)`) {
			t.Errorf("%q: drill error %q lacks the command line's suggestion %q", c.dep, err, cli)
		}
	}
	if err := checkDependency(rc, "postgres", true); err != nil {
		t.Errorf("allow_unknown: %v", err)
	}
	if err := checkDependency(rc, "Bad_Name", true); err == nil {
		t.Error("allow_unknown must still check the name's shape")
	}
}
