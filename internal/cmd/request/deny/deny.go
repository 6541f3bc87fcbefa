// Package deny implements `koshactl request deny`: close a pending change
// request without applying it (anyone but the requester).
package deny

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/request/requestview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// Options are the parsed flags and argument.
type Options struct {
	ID       string
	Reason   string
	NoNotify bool
	Output   string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "deny ID",
		Short: "Deny a pending change request (anyone but the requester); it can never be applied after",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Reason, "reason", "r", "", "why (recorded on the request and in the audit log)")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run closes the request.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := audit.ValidateReason(opts.Reason); err != nil {
		return err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	id, err := env.CallerIdentity(ctx)
	if err != nil {
		return err
	}
	r, rec, err := env.Approvals().Decide(ctx, env.Audit(), opts.ID, id, false, opts.Reason)
	if err != nil {
		return err
	}
	ios := f.IOStreams
	defer cmdenv.PrintActedOn(ios.ErrOut, env, false)
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, requestview.Of(r, f.Clock.Now())); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(ios.Out, "Deny request %s: %s; it can never be applied\n", r.ID, r.Change.Summary())
	}
	cmdenv.Notify(ctx, env, opts.NoNotify, approval.DeniedEvent(r, rec, id.Actor, opts.Reason))
	return nil
}
