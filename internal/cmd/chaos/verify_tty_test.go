package chaos_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestVerifyAtATerminalAsksForTheHeader: `chaos verify -` at a terminal
// showed nothing and waited for an undocumented Ctrl-D. It asks on stderr
// and reads the one line a header is: Enter ends it, with more input
// still to come (the terminal stays open).
func TestVerifyAtATerminalAsksForTheHeader(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	header := strings.TrimSpace(e.MustRun(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	// A terminal: the line, then input that never ends.
	e.In = io.MultiReader(strings.NewReader(header+"\n"), blocking{})
	e.TTY = true
	// Bounded: a command that waits for the end of input fails the test.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r := e.RunContext(ctx, "chaos", "verify", "-")
	if r.Code != 0 || !strings.HasPrefix(r.Stderr, "Paste the X-Kosha-Chaos header and press Enter (Ctrl-C cancels):\n") {
		t.Errorf("exit %d, stderr %q; want 0 and the prompt first", r.Code, r.Stderr)
	}
	// A pipe is read to its end, without a prompt.
	e.TTY, e.In, e.Stdin = false, nil, header
	if r := e.Run("chaos", "verify", "-"); r.Code != 0 || strings.Contains(r.Stderr, "Paste") {
		t.Errorf("piped: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// blocking is input that never comes.
type blocking struct{}

func (blocking) Read([]byte) (int, error) { select {} }
