package root_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// The streams' backstop: text a command prints without rendering it (here
// shell completion, which prints the config file's dependency names as they
// are) still reaches the terminal only as visible escapes.
func TestEveryStreamIsRenderedByTheBackstop(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("contexts:\n  dev:\n    store:\n      local: {}\n    dependencies: [\"open\\e]0;pwned\\a\\u202eai\"]\ncurrent-context: dev\n")
	r := e.MustRun(0, "__complete", "breaker", "get", "")
	termtest.AssertSafe(t, "stdout", r.Stdout)
	termtest.AssertSafe(t, "stderr", r.Stderr)
	if !strings.Contains(r.Stdout, `open\x1b]0;pwned\x07\u202eai`) {
		t.Errorf("the dependency is not shown escaped:\n%s", r.Stdout)
	}
}
