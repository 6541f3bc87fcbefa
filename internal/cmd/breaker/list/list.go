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

// Run lists the overrides, printing each as it is read (sorted by
// dependency: the index's order; --scan holds them all to sort them).
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
	overrides := ov.Each(ctx, env.Context.KnownDependencies())
	if opts.Scan {
		all, err := ov.List(ctx)
		if err != nil {
			return err
		}
		overrides = func(yield func(breaker.Override, error) bool) {
			for _, o := range all {
				if !yield(o, nil) {
					return
				}
			}
		}
	}
	now := f.Clock.Now()
	ios := f.IOStreams
	tty := ios.IsStdoutTTY()
	doc := Result{Envelope: env.Envelope("BreakerOverrideList"), Items: []overrideview.OverrideView{},
		Unreadable: []store.Problem{}}
	fix := "each is listed as the data plane reads it; repair it with koshactl breaker clear DEPENDENCY, or force-open --overwrite"
	out, err := listing.NewStream(ios, listing.Spec[breaker.Override]{Format: opts.Output, Doc: doc, Key: "items",
		View:   func(o breaker.Override) any { return overrideview.View(o, now) },
		Header: []string{"DEPENDENCY", "STATE", "EXPIRES", "ACTOR", "CREATED", "REASON"},
		Row: func(o breaker.Override) []string {
			return []string{o.Dependency, overrideview.StateLabel(o, now), overrideview.Expiry(o, now, tty), o.Actor,
				cmdutil.FormatTime(o.CreatedAt, now, tty), o.Reason}
		},
		None: fmt.Sprintf("No breaker overrides in context %q: every breaker follows its own state.", env.Name),
		Noun: "override item"})
	if err != nil {
		return err
	}
	for o, err := range overrides {
		if err != nil {
			return err
		}
		if opts.Active && !o.ActiveAt(now) {
			continue
		}
		doc.Unreadable = append(doc.Unreadable, o.Problems...)
		if o.Malformed() && breaker.ValidateDependency(o.Dependency) != nil {
			// A pk that names no dependency: by its key (the hint and the
			// command agree).
			fix += "; " + o.Repair()
		}
		if err := out.Add(o); err != nil {
			return err
		}
	}
	out.SetFix(fix)
	return out.End(doc, "", doc.Unreadable)
}
