// Package get implements `koshactl breaker get`: one dependency's override.
package get

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and argument.
type Options struct {
	Dependency string
	Output     string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:               "get DEPENDENCY",
		Short:             "Show one dependency's override (exit 3 when there is none)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cmdenv.CompleteDependencies(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dependency = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the override.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := depargs.CheckName(f, opts.Dependency); err != nil {
		return err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	o, err := env.Overrides().Get(ctx, opts.Dependency)
	if errors.Is(err, store.ErrNotFound) {
		known := env.Context.KnownDependencies()
		if len(known) > 0 && !slices.Contains(known, opts.Dependency) {
			// A name the context does not know has no override because it
			// is likely a typo, not because its breakers are on their own.
			unknown := breaker.CheckKnownDependency(opts.Dependency, known)
			return exitcode.Errorf(exitcode.NotFound, "no override for %s in context %q: %v", opts.Dependency, env.Name, unknown)
		}
		return exitcode.Errorf(exitcode.NotFound, "no override for %s in context %q: its breakers follow their own state", opts.Dependency, env.Name)
	}
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, overrideview.View(o, now))
	}
	tty := ios.IsStdoutTTY()
	version := strconv.FormatInt(o.Version, 10)
	if o.HasProblem(breaker.AttrVersion) {
		version = "unreadable"
	}
	fields := []cmdutil.Field{
		{Label: "Dependency", Value: o.Dependency},
		{Label: "State", Value: overrideview.StateLabel(o, now)},
		{Label: "Reason", Value: o.Reason},
		{Label: "Actor", Value: o.Actor},
		{Label: "Created", Value: cmdutil.FormatTime(o.CreatedAt, now, tty)},
		{Label: "Expires", Value: overrideview.Expiry(o, now, tty)},
		{Label: "Version", Value: version},
	}
	for _, p := range o.Problems {
		fields = append(fields, cmdutil.Field{Label: "Malformed", Value: p.Attribute + ": " + p.Problem})
	}
	cmdutil.PrintFields(ios.Out, fields...)
	if o.Malformed() {
		fmt.Fprintf(ios.ErrOut, "warning: %s\n", textsafe.Line(o.MalformedSummary(now)))
	}
	return nil
}
