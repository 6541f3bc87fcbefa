// Package lift implements `koshactl freeze lift`: end the fleet's freeze.
package lift

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/fleetwait"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags.
type Options struct {
	Reason string
	levercmd.Flags
	fleetwait.Options
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "lift --reason REASON",
		Short: "Lift the fleet's freeze (the table's policy may need a second person)",
		Long: heredoc.Doc(`
			End the fleet's freeze: write its lifted_at (and who, why) with its audit record
			in one transaction, and announce it. The item stays in the table: a chaos header
			minted before the lift is never honoured, one minted after it is.

			The table's policy can require approvals for a lift (docs/policies/four-eyes.cedar
			does): the lift then becomes a change request (exit 12) that another person
			approves with koshactl request approve ID. Nothing frozen (no freeze, or it
			ended): exit 0, saying so, nothing written.

			--wait then waits until every instance's kosha_chaos_frozen gauge reports 0.
		`),
		Example: heredoc.Doc(`
			koshactl freeze lift --reason "not us: the provider's outage"
			koshactl freeze lift --reason "incident over" --wait
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Check(c, opts.DryRun); err != nil {
				return err
			}
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Reason, "reason", "r", "", "why (required)")
	levercmd.AddFlags(cmd, &opts.Flags, "do not ask for confirmation on a protected context")
	fleetwait.AddFlags(cmd, &opts.Options, "the lift (0)")
	return cmd
}

// Result is the JSON output of freeze lift.
type Result struct {
	cmdenv.Envelope
	DryRun bool `json:"dry_run"`
	// Action is lifted, would-lift or not-frozen.
	Action            string          `json:"action"`
	Freeze            *freeze.View    `json:"freeze"`
	AuditID           string          `json:"audit_id,omitempty"`
	ConfirmedByReread bool            `json:"confirmed_by_reread,omitempty"`
	Review            string          `json:"review,omitempty"`
	Convergence       *fleetwait.View `json:"convergence,omitempty"`
}

// Run lifts the freeze.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := freeze.CheckReason(opts.Reason); err != nil {
		return cmdutil.Usagef("--reason: %v", err)
	}
	env, err := levercmd.Env(ctx, f, opts.Flags, opts.Reason)
	if err != nil {
		return err
	}
	reader, err := opts.Reader(ctx, env)
	if err != nil {
		return err
	}
	rep, err := levercmd.Change(ctx, f, env, freeze.Lift(opts.Reason), opts.Flags)
	if rep.Outcomes == nil || rep.Pending != nil {
		return levercmd.Refused(ctx, f, env, rep, err, opts.Flags)
	}
	o := rep.Outcomes[0]
	if !opts.DryRun && !o.Written && !o.Noop {
		return o.Err
	}
	now := f.Clock.Now()
	r := freeze.ResultOf(o)
	out := Result{Envelope: env.Envelope("FreezeLiftResult"), DryRun: opts.DryRun, Action: "lifted", AuditID: o.Record.ID,
		ConfirmedByReread: o.Confirmed, Review: levercmd.Review(rep)}
	shown := r.After
	switch {
	case r.NotFrozen:
		out.Action, shown, reader = "not-frozen", r.Before, nil
	case opts.DryRun:
		out.Action = "would-lift"
	}
	if shown != nil {
		v := shown.View(now)
		out.Freeze = &v
	}
	return opts.Finish(ctx, f, env, opts.Flags, reader, false, rep.Event, &out, &out.Convergence, table(out, r, now))
}

func table(out Result, r freeze.Result, now time.Time) string {
	var w strings.Builder
	switch {
	case r.NotFrozen && r.Before == nil:
		w.WriteString("The fleet is not frozen (no freeze is recorded): nothing to lift.\n")
	case r.NotFrozen:
		fmt.Fprintf(&w, "The fleet is not frozen (%s): nothing to lift.\n", r.Before.Describe(now))
	default:
		verb := "Lifted"
		if out.DryRun {
			verb = "Would lift"
		}
		fmt.Fprintf(&w, "%s the freeze set by %s", verb, textsafe.Line(r.Before.Actor))
		if r.Before.Ref != "" {
			fmt.Fprintf(&w, " (%s)", textsafe.Line(r.Before.Ref))
		}
		fmt.Fprintf(&w, " — reason: %s\n", textsafe.Line(r.After.LiftReason))
		levercmd.Confirmed(&w, out.ConfirmedByReread)
		if !out.DryRun {
			w.WriteString("A chaos header minted before the lift stays void; sign a new one (koshactl chaos sign).\n")
		}
	}
	levercmd.BreakGlass(&w, out.Review)
	return w.String()
}
