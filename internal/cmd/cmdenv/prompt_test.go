package cmdenv_test

import (
	"context"
	"io"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// A protected-context prompt waiting for the operator ends on Ctrl-C (the
// command's context), and the command exits 130 having changed nothing.
func TestConfirmProtectedEndsWhenInterrupted(t *testing.T) {
	term := &silentTerminal{reading: make(chan struct{}), release: make(chan struct{})}
	defer close(term.release)
	streams, _, _, errOut := iostreams.Test()
	streams.SetStdinTTY(true)
	streams.SetStderrTTY(true)
	f := &cmdenv.Factory{IOStreams: streams, Prompter: &cmdutil.LinePrompter{In: term, Out: errOut}}
	env := &cmdenv.Env{Name: "prod", Context: &config.Context{Protected: true}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-term.reading; cancel() }()
	err := cmdenv.ConfirmProtected(ctx, f, env, false, "clear 1 breaker override(s)")
	if got := exitcode.Of(err); got != exitcode.Interrupted {
		t.Fatalf("interrupted prompt: %v (exit %d), want exit %d", err, got, exitcode.Interrupted)
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
