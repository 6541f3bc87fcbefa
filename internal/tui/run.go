package tui

import (
	"context"
	"errors"
	"io"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// Run runs the dashboard on in and out until the operator quits or ctx is
// cancelled (which returns ctx's error).
func Run(ctx context.Context, deps Deps, opts Options, in io.Reader, out io.Writer) error {
	m := New(deps, opts).WithContext(ctx)
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out)}
	if !opts.Color {
		// NO_COLOR: keep bold and reverse, drop every colour.
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err := tea.NewProgram(m, popts...).Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return ctx.Err()
	}
	return err
}
