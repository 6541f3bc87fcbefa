package root_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// The streams' backstop: a value a command prints without rendering it (here
// a table name from the config file, in config get-contexts) still reaches
// the terminal only as a visible escape.
func TestEveryStreamIsRenderedByTheBackstop(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("contexts:\n  dev:\n    store:\n      dynamodb:\n        table: \"kosha\\e]0;pwned\\a\\u202e\"\n        region: eu-west-1\n")
	r := e.Run("config", "get-contexts")
	termtest.AssertSafe(t, "stdout", r.Stdout)
	termtest.AssertSafe(t, "stderr", r.Stderr)
	if !strings.Contains(r.Stdout+r.Stderr, `kosha\x1b]0;pwned\x07\u202e`) {
		t.Errorf("the table name is not shown escaped:\n%s\n%s", r.Stdout, r.Stderr)
	}
}
