// Package closing implements `koshactl request deny` (anyone but the
// requester) and `koshactl request cancel` (the requester alone): both close
// a pending change request without applying it, so that it can never be
// applied after. They differ only in who may and in their words.
package closing

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/request/requestview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Verb is one way to close a request.
type Verb struct {
	name, short, past string
	// byRequester: cancel (the requester alone), else deny (anyone else).
	byRequester bool
}

// The two verbs.
var (
	Deny   = Verb{name: "deny", past: "Denied", short: "Deny a pending change request (anyone but the requester); it can never be applied after"}
	Cancel = Verb{name: "cancel", past: "Canceled", byRequester: true,
		short: "Cancel a pending change request (the requester alone); it can never be applied after"}
)

// Options are the parsed flags and argument.
type Options struct {
	ID       string
	Reason   string
	NoNotify bool
	Output   string
}

// NewCmd builds the command of v.
func NewCmd(f *cmdenv.Factory, v Verb) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   v.name + " ID",
		Short: v.short,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			return Run(c.Context(), f, v, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Reason, "reason", "r", "", "why (recorded on the request and in the audit log)")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run closes the request as v says.
func Run(ctx context.Context, f *cmdenv.Factory, v Verb, opts *Options) error {
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
	r, rec, err := env.Approvals().Decide(ctx, env.Audit(), opts.ID, id, v.byRequester, opts.Reason)
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
		fmt.Fprintf(ios.Out, "%s request %s: %s; it can never be applied\n", v.past, r.ID, textsafe.Line(r.Change.Summary()))
	}
	cmdenv.Notify(ctx, env, opts.NoNotify, approval.ClosedEvent(r, rec, id.Actor, opts.Reason))
	return nil
}
