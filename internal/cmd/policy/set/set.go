// Package set implements `koshactl policy set`: store the table's change
// policy, audited and announced.
package set

import (
	"context"
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/policy"
)

// Options are the parsed flags and argument.
type Options struct {
	File     string
	Reason   string
	Yes      bool
	NoNotify bool
	Output   string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "set FILE",
		Short: "Store a Cedar policy as the table's change policy (admin role)",
		Long: heredoc.Doc(`
			Parse FILE as a Cedar policy set, validate it against koshactl's schema
			(docs/contracts/policy.md), and store it as the table's policy, in one
			transaction with its audit record; then announce it. A policy that does not
			parse or validate is refused with its line and the problem (exit 2), and
			nothing is stored. Setting the same text again changes nothing.

			From then on every lever command asks it first: a change it allows goes
			ahead, one that needs approvals becomes a change request (exit 12), one
			it denies is refused (exit 7). Only the admin IAM role may write the policy
			item (koshactl iam policy --role admin).

			There is no policy delete: the policy in force is the one its admin's
			policy.set proof names, and an item that disappears is flagged by koshactl
			audit list --unapproved. To leave four eyes, set docs/policies/allow-all.cedar
			(every change goes at once), with its record and proof.
		`),
		Example: heredoc.Doc(`
			koshactl policy set docs/policies/four-eyes.cedar --reason "four eyes on production"
			koshactl policy set docs/policies/allow-all.cedar --reason "leave four eyes"
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Reason, "reason", "r", "", "why (recorded in the audit log; required)")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a protected context")
	_ = cmd.MarkFlagFilename("FILE", "cedar")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output.
type Result struct {
	cmdenv.Envelope
	Action    string   `json:"action"`
	SHA256    string   `json:"sha256"`
	Version   int64    `json:"version"`
	Policies  []string `json:"policies"`
	AuditID   string   `json:"audit_id,omitempty"`
	Confirmed bool     `json:"confirmed_by_reread,omitempty"`
}

// Run validates and stores the policy.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if opts.Reason == "" {
		return cmdutil.Usagef("a reason is required: pass --reason \"why the policy changes\" (it is recorded with the change)")
	}
	if err := audit.ValidateReason(opts.Reason); err != nil {
		return err
	}
	text, _, err := fsutil.ReadRegular(opts.File, policy.MaxBytes+1)
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("read policy: %w", err))
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	set, err := policy.Parse(env.PolicySchema(), opts.File, text)
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("policy refused, nothing stored: %w", err))
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	if err := cmdenv.ConfirmProtected(ctx, f, env, opts.Yes, "set the table's change policy"); err != nil {
		return err
	}
	by, err := env.CallerIdentity(ctx)
	if err != nil {
		return err
	}
	res, err := env.Policies().Set(ctx, env.Audit(), set, by, opts.Reason)
	if err != nil {
		return err // a race lost to another set is a conflict (store.ErrConditionFailed)
	}
	out := Result{Envelope: env.Envelope("PolicySetResult"), Action: "set", SHA256: res.After.SHA256,
		Version: res.After.Version, Policies: set.Policies(), AuditID: res.Record.ID, Confirmed: res.Confirmed}
	if res.Unchanged {
		out.Action = "unchanged"
	}
	ios := f.IOStreams
	defer cmdenv.PrintActedOn(ios.ErrOut, env, false)
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, out); err != nil {
			return err
		}
	} else if res.Unchanged {
		fmt.Fprintf(ios.Out, "The table's policy is already this one (sha256 %s, version %d): nothing changed\n", out.SHA256[:12], out.Version)
	} else {
		fmt.Fprintf(ios.Out, "Set the table's policy to %s: version %d, sha256 %s, %s\n", opts.File, out.Version, out.SHA256[:12], human.Count(int64(len(out.Policies)), "policy"))
		levercmd.Confirmed(ios.Out, res.Confirmed)
	}
	if !res.Unchanged {
		cmdenv.Notify(ctx, env, opts.NoNotify, notify.Event{Action: policy.ActionSet, Actor: by.Actor, Reason: opts.Reason,
			Detail: fmt.Sprintf("the table's change policy is now version %d (sha256 %s)", out.Version, out.SHA256[:12]),
			Levers: []notify.Lever{{Subject: policy.Key, Change: fmt.Sprintf("set to version %d", out.Version), AuditID: res.Record.ID}}})
	}
	return nil
}
