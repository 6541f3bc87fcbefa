package cmdutil_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// A prompt names what it is about (a holder read from the store, say): it
// is shown escaped, and the answer is read as typed.
func TestLinePrompterRendersThePrompt(t *testing.T) {
	var out bytes.Buffer
	p := &cmdutil.LinePrompter{In: strings.NewReader("prod\r\n"), Out: &out}
	answer, err := p.Input(context.Background(), "Replace the override by eve\x1b]0;title\x07\u202e? type prod: ")
	if err != nil || answer != "prod" {
		t.Fatalf("answer %q, %v", answer, err)
	}
	termtest.AssertSafe(t, "prompt", out.String())
	if want := `Replace the override by eve\x1b]0;title\x07\u202e? type prod: `; out.String() != want {
		t.Errorf("prompt = %q, want %q", out.String(), want)
	}
}
