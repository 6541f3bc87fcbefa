package cmdenv

import (
	"context"
	"fmt"
	"strings"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// ConfirmProtected guards a mutation on a protected context: it passes when
// the context is not protected or yes is set; otherwise it asks the operator
// to type the context's name, and without a terminal it refuses and names
// --yes. what describes the change in the prompt; detail (the change's
// impact, one fact a line, each through textsafe) is shown on stderr just
// before it asks, so the person typing the context's name has read what
// the change does.
func ConfirmProtected(ctx context.Context, f *Factory, env *Env, yes bool, what string, detail ...string) error {
	if !env.Context.Protected || yes {
		return nil
	}
	if !f.IOStreams.CanPrompt() {
		return exitcode.Errorf(exitcode.Refused, "context %q is protected: pass --yes to %s without a prompt", env.Name, what)
	}
	for _, l := range detail {
		fmt.Fprintf(f.IOStreams.ErrOut, "  %s\n", textsafe.Line(l))
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
