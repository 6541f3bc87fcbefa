// Package ack implements `koshactl request ack`: acknowledge a break-glass
// review (someone other than the actor who broke the glass).
package ack

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and argument.
type Options struct {
	ID     string
	Reason string
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "ack REVIEW",
		Short: "Acknowledge a break-glass review (someone other than its actor); it leaves request list --reviews",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Reason, "reason", "r", "", "what you found (recorded on the review and in the audit log)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run acknowledges the review.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := audit.ValidateReason(opts.Reason); err != nil {
		return err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	id, err := env.CallerIdentity(ctx)
	if err != nil {
		return err
	}
	rv, _, err := env.Approvals().Ack(ctx, env.Audit(), opts.ID, id, opts.Reason)
	if err != nil {
		return err
	}
	ios := f.IOStreams
	defer cmdenv.PrintActedOn(ios.ErrOut, env, false)
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, rv)
	}
	fmt.Fprintf(ios.Out, "Review %s of %s's break-glass %s acknowledged by %s\n", rv.ID, textsafe.Line(rv.Actor), rv.Action, textsafe.Line(rv.AckedBy))
	return nil
}
