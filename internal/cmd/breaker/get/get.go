// Package get implements `koshactl breaker get`: one dependency's override.
package get

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/shared"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Options are the parsed flags and argument.
type Options struct {
	Dependency string
	Output     string
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:               "get DEPENDENCY",
		Short:             "Show one dependency's override (exit 3 when there is none)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cmdutil.CompleteDependencies(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dependency = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the override.
func Run(ctx context.Context, f *cmdutil.Factory, opts *Options) error {
	if err := breaker.ValidateDependency(opts.Dependency); err != nil {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	o, err := breaker.NewOverrides(env.Store, f.Clock).Get(ctx, opts.Dependency)
	if errors.Is(err, store.ErrNotFound) {
		return cmdutil.WithCode(cmdutil.ExitNotFound,
			fmt.Errorf("no override for %s in context %q: its breakers follow their own state", opts.Dependency, env.Name))
	}
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	io := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(io.Out, opts.Output, shared.View(o, now))
	}
	tty := io.IsStdoutTTY()
	fmt.Fprintf(io.Out, "Dependency:  %s\n", o.Dependency)
	fmt.Fprintf(io.Out, "State:       %s\n", shared.StateLabel(o, now))
	fmt.Fprintf(io.Out, "Reason:      %s\n", o.Reason)
	fmt.Fprintf(io.Out, "Actor:       %s\n", o.Actor)
	fmt.Fprintf(io.Out, "Created:     %s\n", cmdutil.FormatTime(o.CreatedAt, now, tty))
	fmt.Fprintf(io.Out, "Expires:     %s\n", shared.Expiry(o, now, tty))
	fmt.Fprintf(io.Out, "Version:     %d\n", o.Version)
	return nil
}
