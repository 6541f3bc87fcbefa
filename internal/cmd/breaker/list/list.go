// Package list implements `koshactl breaker list`: every override in the
// context's store, active or expired.
package list

import (
	"context"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/listing"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Options are the parsed flags.
type Options struct {
	Active bool
	// Scan lists with a scan of the table instead of by key and index.
	Scan   bool
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List breaker overrides (active and expired)",
		Long: heredoc.Doc(`
			List every breaker override item in the context's store, active or expired.

			An item that does not follow the override contract (written by another
			tool) is listed as the data plane reads it and marked malformed, with each
			problem on stderr (or under "unreadable" in -o json|yaml).

			Exit codes: 0 listed; 10 listed, but some items are malformed (repair one
			with koshactl breaker clear, or force-open --overwrite).
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Active, "active", false, "show only overrides in force now")
	cmd.Flags().BoolVar(&opts.Scan, "scan", false, "scan the whole table for override items, including ones written by hand without the index attribute (costs the table's size)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output of list.
type Result struct {
	cmdenv.Envelope
	Items []overrideview.OverrideView `json:"items"`
	// Unreadable lists every malformed attribute of the overrides listed
	// (docs/contracts/cli-output.md); each item also carries its own.
	Unreadable []store.Problem `json:"unreadable"`
}

// Run lists the overrides.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	ov, err := depargs.Overrides(env)
	if err != nil {
		return err
	}
	ov.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	var all []breaker.Override
	if opts.Scan {
		all, err = ov.List(ctx)
	} else {
		all, err = ov.ListFor(ctx, env.Context.KnownDependencies())
	}
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	out := Result{Envelope: env.Envelope("BreakerOverrideList"), Items: []overrideview.OverrideView{},
		Unreadable: []store.Problem{}}
	var shown []breaker.Override
	for _, o := range all {
		if opts.Active && !o.ActiveAt(now) {
			continue
		}
		shown = append(shown, o)
		out.Items = append(out.Items, overrideview.View(o, now))
		out.Unreadable = append(out.Unreadable, o.Problems...)
	}
	ios := f.IOStreams
	fix := "each is listed as the data plane reads it; repair it with koshactl breaker clear DEPENDENCY, or force-open --overwrite"
	for _, o := range shown {
		if o.Malformed() && breaker.ValidateDependency(o.Dependency) != nil {
			// A pk that names no dependency: by its key (the hint and the
			// command agree).
			fix += "; " + o.Repair()
		}
	}
	tty := ios.IsStdoutTTY()
	return listing.Print(ios, listing.List{Format: opts.Output, Doc: out,
		Rows: len(shown), Header: []string{"DEPENDENCY", "STATE", "EXPIRES", "ACTOR", "CREATED", "REASON"},
		Write: func(tw *cmdutil.Table) {
			for _, o := range shown {
				tw.Row(o.Dependency, overrideview.StateLabel(o, now), overrideview.Expiry(o, now, tty), o.Actor,
					cmdutil.FormatTime(o.CreatedAt, now, tty), o.Reason)
			}
		},
		None:     fmt.Sprintf("No breaker overrides in context %q: every breaker follows its own state.", env.Name),
		Problems: out.Unreadable, Noun: "override item", Fix: fix})
}
