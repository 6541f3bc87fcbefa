// Package list implements `koshactl breaker list`: every override in the
// context's store, active or expired.
package list

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/shared"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// Options are the parsed flags.
type Options struct {
	Active bool
	Output string
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List breaker overrides (active and expired)",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Active, "active", false, "show only overrides in force now")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output of list.
type Result struct {
	Kind    string                `json:"kind"`
	Context string                `json:"context"`
	Store   string                `json:"store"`
	Items   []shared.OverrideView `json:"items"`
}

// Run lists the overrides.
func Run(ctx context.Context, f *cmdutil.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	ov := breaker.NewOverrides(env.Store, f.Clock)
	ov.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	all, err := ov.ListFor(ctx, env.Context.KnownDependencies())
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	out := Result{Kind: "BreakerOverrideList", Context: env.Name, Store: env.Store.Describe(), Items: []shared.OverrideView{}}
	var shown []breaker.Override
	for _, o := range all {
		if opts.Active && !o.ActiveAt(now) {
			continue
		}
		shown = append(shown, o)
		out.Items = append(out.Items, shared.View(o, now))
	}
	io := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(io.Out, opts.Output, out)
	}
	if len(shown) == 0 {
		fmt.Fprintf(io.Out, "No breaker overrides in context %q: every breaker follows its own state.\n", env.Name)
		return nil
	}
	tty := io.IsStdoutTTY()
	tw := cmdutil.NewTable(io.Out)
	tw.Row("DEPENDENCY", "STATE", "EXPIRES", "ACTOR", "CREATED", "REASON")
	for _, o := range shown {
		tw.Row(o.Dependency, shared.StateLabel(o, now), shared.Expiry(o, now, tty), o.Actor,
			cmdutil.FormatTime(o.CreatedAt, now, tty), o.Reason)
	}
	return tw.Flush()
}
