// Package getcontexts implements `koshactl config get-contexts`: list the
// contexts, marking the one commands act on.
package getcontexts

import (
	"strconv"

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
		Use:   "get-contexts",
		Short: "List contexts, marking the one commands act on",
		Long: heredoc.Doc(`
			List the contexts. CURRENT marks the context commands act on: --context, else
			$KOSHACTL_CONTEXT, else the config file's current-context. When the flag or
			the variable selects it, a line on stderr says so and names the file's own
			current-context. A context with a value out of range (a hand-edited
			max-override, say) is listed with its STORE marked INVALID, and a line on
			stderr says why and how to repair it: commands refuse that context until
			set-context repairs it, and keep working on the others.
		`),
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return Run(f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run lists the contexts.
func Run(f *cmdenv.Factory, opts *Options) error {
	file, err := f.Config()
	if err != nil {
		return err
	}
	selected, source := f.SelectContext(file)
	type row struct {
		Name      string `json:"name"`
		Current   bool   `json:"current"`
		Store     string `json:"store"`
		Protected bool   `json:"protected"`
		// Invalid is why the context is refused (a value out of
		// range), empty when it is usable.
		Invalid string `json:"invalid,omitempty"`
	}
	rows := []row{}
	for _, n := range file.Names() {
		ctx, _ := file.Lookup(n)
		r := row{Name: n, Current: n == selected, Store: contextview.DescribeStore(f.Environ, ctx), Protected: ctx.Protected}
		if err := file.Invalid(n); err != nil {
			r.Invalid = err.Error()
		}
		rows = append(rows, r)
	}
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(f.IOStreams.Out, opts.Output, map[string]any{"kind": "ContextList",
			"current": contextview.CurrentOf(file, selected, source), "items": rows})
	}
	tw := cmdutil.NewTable(f.IOStreams.Out)
	tw.Header(f.IOStreams, "CURRENT", "NAME", "STORE", "PROTECTED")
	for _, r := range rows {
		mark := ""
		if r.Current {
			mark = "*"
		}
		store := r.Store
		if r.Invalid != "" {
			store = "INVALID: " + store
		}
		tw.Row(mark, r.Name, store, strconv.FormatBool(r.Protected))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	contextview.PrintSelectedBy(f, file, selected, source)
	contextview.PrintInvalid(f, file)
	return nil
}
