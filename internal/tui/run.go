package tui

import (
	"context"
	"errors"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/mattn/go-isatty"
)

// FPS caps how often the renderer flushes a changed frame. Bubble Tea's
// renderer wakes at this rate even when nothing changes; its default of 60
// costs about 1% of a core on an idle dashboard, 20 about a third of that,
// and a key press still shows within 50 ms (docs/benchmarks/dashboard.md).
const FPS = 20

// Run runs the dashboard on in and out until the operator quits or ctx is
// canceled (which returns ctx's error). An out that is not a terminal has
// no size to ask for: it gets 80x24 until a resize says otherwise.
func Run(ctx context.Context, deps Deps, opts Options, in io.Reader, out io.Writer) error {
	m := New(deps, opts).WithContext(ctx)
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithFPS(FPS)}
	if f, ok := out.(*os.File); !ok || !isatty.IsTerminal(f.Fd()) {
		popts = append(popts, tea.WithWindowSize(80, 24))
	}
	if !opts.Color {
		// NO_COLOR: keep bold and reverse, drop every color.
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err := tea.NewProgram(m, popts...).Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return ctx.Err()
	}
	return err
}
