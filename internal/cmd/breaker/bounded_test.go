package breaker_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// Issue 21: a 399 KB reason was printed in full in every warning. Every
// warning and error quotes it bounded (textsafe.Quote): its start and its
// length.
func TestHugeReasonIsQuotedBoundedInWarnings(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	huge := "INC-42 " + strings.Repeat("x", 399_000-7)
	e.PutRaw(hostileItem(map[string]attr{"reason": {Type: "S", Text: huge}}))
	const bound = 4096
	for _, args := range [][]string{
		{"breaker", "list"},
		{"breaker", "get", "openai"},
		{"breaker", "force-open", "openai", "--reason", "mine", "--for", "10m"},
	} {
		r := e.Run(args...)
		if r.Code != 0 && r.Code != exitcode.Partial && r.Code != exitcode.Conflict {
			t.Errorf("%v: exit %d\n%s", args, r.Code, r.Stderr)
		}
		if len(r.Stderr) > bound {
			t.Errorf("%v: stderr is %d bytes, want a bounded quote (at most %d):\n%.300s…", args, len(r.Stderr), bound, r.Stderr)
		}
		if !strings.Contains(r.Stderr+r.Stdout, `"INC-42 xxx`) || !strings.Contains(r.Stderr+r.Stdout, "(399000 characters)") {
			t.Errorf("%v: the quote does not say how long the reason is:\n%.2000s", args, r.Stderr)
		}
	}
}
