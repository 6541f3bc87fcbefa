// Package currentcontext implements `koshactl config current-context`:
// print the name of the context commands act on, and where it came from.
package currentcontext

import (
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/config/contextview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// Options are the parsed flags.
type Options struct {
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "current-context",
		Short: "Print the name of the context commands act on, and where it came from",
		Long: heredoc.Doc(`
			Print the name of the context commands act on: --context, else
			$KOSHACTL_CONTEXT, else the config file's current-context, else the built-in
			local context. The name alone goes to stdout (for scripts); a line on stderr
			says where it came from. -o json gives both, and the file's own
			current-context. A name that is no context is refused (exit 3), and a
			context with a value out of range is refused as every command refuses it.
		`),
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return Run(f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the selected context.
func Run(f *cmdenv.Factory, opts *Options) error {
	file, err := f.Config()
	if err != nil {
		return err
	}
	name, source := f.SelectContext(file)
	// The name must be a context commands can act on: an unknown
	// one is refused (exit 3) as every other command refuses it,
	// an invalid one as it is refused when used.
	if _, err := file.Context(name); err != nil {
		return err
	}
	if opts.Output != cmdutil.FormatTable {
		v := contextview.CurrentOf(file, name, source)
		v.Kind = "CurrentContext"
		return cmdutil.PrintStructured(f.IOStreams.Out, opts.Output, v)
	}
	fmt.Fprintln(f.IOStreams.Out, name)
	if source == cmdenv.ContextFromFlag || source == cmdenv.ContextFromEnv {
		contextview.PrintSelectedBy(f, file, name, source)
	} else {
		fmt.Fprintf(f.IOStreams.ErrOut, "(from %s)\n", source.Describe(file))
	}
	return nil
}
