// Package usecontext implements `koshactl config use-context`: make a
// context the current one.
package usecontext

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/config"
)

// Options are the parsed arguments.
type Options struct {
	Name string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "use-context NAME",
		Short: "Make NAME the current context",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Name = args[0]
			return Run(f, opts)
		},
	}
}

// Run makes opts.Name the config file's current context.
func Run(f *cmdenv.Factory, opts *Options) error {
	cur, err := f.Config()
	if err != nil {
		return err
	}
	if _, err := config.Update(cur.Path(), func(file *config.File) error {
		if _, err := file.Context(opts.Name); err != nil {
			return err
		}
		file.CurrentContext = opts.Name
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(f.IOStreams.Out, "Switched to context %q.\n", opts.Name)
	return nil
}
