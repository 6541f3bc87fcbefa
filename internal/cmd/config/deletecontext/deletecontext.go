// Package deletecontext implements `koshactl config delete-context`:
// remove a context from the config file.
package deletecontext

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
		Use:   "delete-context NAME",
		Short: "Remove a context from the config file",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Name = args[0]
			return Run(f, opts)
		},
	}
}

// Run removes the context opts.Name from the config file (the file's
// current context too, when it is that one).
func Run(f *cmdenv.Factory, opts *Options) error {
	cur, err := f.Config()
	if err != nil {
		return err
	}
	if _, err := config.Update(cur.Path(), func(file *config.File) error {
		if _, ok := file.Contexts[opts.Name]; !ok {
			return fmt.Errorf("%w %q in %s", config.ErrNoContext, opts.Name, file.Path())
		}
		delete(file.Contexts, opts.Name)
		if file.CurrentContext == opts.Name {
			file.CurrentContext = ""
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(f.IOStreams.Out, "Deleted context %q.\n", opts.Name)
	return nil
}
