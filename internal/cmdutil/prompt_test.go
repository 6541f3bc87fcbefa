package cmdutil_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
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

// silentTerminal is a terminal nobody types on: it reports the first Read,
// then blocks until the test ends.
type silentTerminal struct {
	reading chan struct{}
	release chan struct{}
}

func (s *silentTerminal) Read([]byte) (int, error) {
	close(s.reading)
	<-s.release
	return 0, io.EOF
}

// A protected-context prompt waiting for the operator ends on Ctrl-C (the
// command's context), and the command exits 130 having changed nothing.
func TestConfirmProtectedEndsWhenInterrupted(t *testing.T) {
	term := &silentTerminal{reading: make(chan struct{}), release: make(chan struct{})}
	defer close(term.release)
	streams, _, _, errOut := iostreams.Test()
	streams.SetStdinTTY(true)
	streams.SetStderrTTY(true)
	f := &cmdutil.Factory{IOStreams: streams, Prompter: &cmdutil.LinePrompter{In: term, Out: errOut}}
	env := &cmdutil.Env{Name: "prod", Context: &config.Context{Protected: true}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-term.reading; cancel() }()
	err := cmdutil.ConfirmProtected(ctx, f, env, false, "clear 1 breaker override(s)")
	if got := exitcode.Of(err); got != exitcode.Interrupted {
		t.Fatalf("interrupted prompt: %v (exit %d), want exit %d", err, got, exitcode.Interrupted)
	}
}
