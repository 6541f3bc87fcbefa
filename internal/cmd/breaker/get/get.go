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

// read reads the override (exit 3 when there is none).
func read(ctx context.Context, f *cmdenv.Factory, dependency string) (breaker.Override, error) {
	if err := depargs.CheckName(f, dependency); err != nil {
		return breaker.Override{}, err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return breaker.Override{}, err
	}
	ov, err := depargs.Overrides(env)
	if err != nil {
		return breaker.Override{}, err
	}
	o, err := ov.Get(ctx, dependency)
	if errors.Is(err, store.ErrNotFound) {
		known := env.Context.KnownDependencies()
		if len(known) > 0 && !slices.Contains(known, dependency) {
			// A name the context does not know has no override because it
			// is likely a typo, not because its breakers are on their own.
			unknown := breaker.CheckKnownDependency(dependency, known)
			return o, exitcode.Errorf(exitcode.NotFound, "no override for %s in context %q: %v", dependency, env.Name, unknown)
		}
		return o, exitcode.Errorf(exitcode.NotFound, "no override for %s in context %q: its breakers follow their own state", dependency, env.Name)
	}
	return o, err
}

// Read is the override as -o json prints it: the MCP server's
// breaker_get.
func Read(ctx context.Context, f *cmdenv.Factory, opts *Options) (overrideview.OverrideView, error) {
	o, err := read(ctx, f, opts.Dependency)
	if err != nil {
		return overrideview.OverrideView{}, err
	}
	return overrideview.View(o, f.Clock.Now()), nil
}

// Run prints the override.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	o, err := read(ctx, f, opts.Dependency)
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
	if o.Approval != nil {
		// Who approved the force, beside who asked for it (the actor).
		fields = append(fields, cmdutil.Field{Label: "Approval", Value: o.Approval.Describe()})
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
