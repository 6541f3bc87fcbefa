package cmdutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Prompter asks the operator questions on a terminal.
type Prompter interface {
	// Input shows prompt and returns the line typed, without its newline.
	// It returns ctx's error as soon as ctx ends (Ctrl-C), even while the
	// operator has typed nothing.
	Input(ctx context.Context, prompt string) (string, error)
}

// LinePrompter prompts on Out and reads lines from In. The prompt is
// rendered with [textsafe.Line]: it can name a context, a dependency or the
// actor holding an override, and none of that may drive the terminal.
type LinePrompter struct {
	In  io.Reader
	Out io.Writer
	r   *bufio.Reader
}

// Input implements [Prompter].
func (p *LinePrompter) Input(ctx context.Context, prompt string) (string, error) {
	if p.r == nil {
		p.r = bufio.NewReader(p.In)
	}
	fmt.Fprint(p.Out, textsafe.Line(prompt))
	line, err := iostreams.ReadLine(ctx, p.r)
	if err != nil {
		return "", fmt.Errorf("read answer: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// ConfirmProtected guards a mutation on a protected context: it passes when
// the context is not protected or yes is set; otherwise it asks the operator
// to type the context's name, and without a terminal it refuses and names
// --yes. what describes the change in the prompt.
func ConfirmProtected(ctx context.Context, f *Factory, env *Env, yes bool, what string) error {
	if !env.Context.Protected || yes {
		return nil
	}
	if !f.IOStreams.CanPrompt() {
		return exitcode.Errorf(exitcode.Refused, "context %q is protected: pass --yes to %s without a prompt", env.Name, what)
	}
	answer, err := f.Prompter.Input(ctx, fmt.Sprintf("Context %q is PROTECTED. To %s, type the context name: ", env.Name, what))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("confirmation not given: %w", err) // interrupted: exit 130, nothing changed
		}
		return exitcode.Errorf(exitcode.Refused, "confirmation not given: %w", err)
	}
	if strings.TrimSpace(answer) != env.Name {
		return exitcode.Errorf(exitcode.Refused, "confirmation did not match %q: nothing was changed", env.Name)
	}
	return nil
}
