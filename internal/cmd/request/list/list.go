// Package list implements `koshactl request list`.
package list

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/request/requestview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags.
type Options struct {
	All     bool
	Reviews bool
	Output  string
	// Mine keeps the requests the caller asked for; WaitingOnMe the
	// pending ones the caller may approve.
	Mine, WaitingOnMe bool
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List pending change requests (--all: every one; --reviews: open break-glass reviews)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "list decided and expired requests too (and acknowledged reviews with --reviews)")
	cmd.Flags().BoolVar(&opts.Reviews, "reviews", false, "list break-glass reviews instead of requests")
	cmd.Flags().BoolVar(&opts.Mine, "mine", false, "only the requests you asked for (with --all: decided ones too)")
	cmd.Flags().BoolVar(&opts.WaitingOnMe, "waiting-on-me", false, "only the pending requests you may approve: asked by someone else, not approved by you yet, your approval permitted by the table's policy (needs a verified identity)")
	cmd.MarkFlagsMutuallyExclusive("mine", "waiting-on-me")
	cmd.MarkFlagsMutuallyExclusive("reviews", "mine")
	cmd.MarkFlagsMutuallyExclusive("reviews", "waiting-on-me")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// mineOnly keeps the requests of l that --mine or --waiting-on-me ask
// for, judged for the caller (its identity established once).
func mineOnly(ctx context.Context, env *cmdenv.Env, opts *Options, l approval.Listing, now time.Time) (approval.Listing, error) {
	if !opts.Mine && !opts.WaitingOnMe {
		return l, nil
	}
	id, err := env.CallerIdentity(ctx)
	if err != nil {
		return l, err
	}
	if opts.WaitingOnMe && !id.Verified() {
		return l, exitcode.Errorf(exitcode.Auth, "--waiting-on-me: %s is not verified (context %q), and only a verified identity approves (on a local context, a demo identity: $KOSHACTL_DEMO_USER): list them all with koshactl request list",
			textsafe.Line(id.Actor), env.Name)
	}
	// Whether the policy would take the caller's approval is asked of the
	// table's policy as it is now, read once.
	var stored *policy.Stored
	if opts.WaitingOnMe {
		if stored, err = env.Policies().Load(ctx); err != nil {
			return l, err
		}
	}
	svc := env.Approvals()
	kept := l.Requests[:0:0]
	for _, r := range l.Requests {
		if opts.Mine && r.AskedBy(id) || opts.WaitingOnMe && svc.Awaits(r, stored, id, now) {
			kept = append(kept, r)
		}
	}
	l.Requests = kept
	return l, nil
}

// Result is the JSON output.
type Result struct {
	Kind       string             `json:"kind"`
	Requests   []requestview.View `json:"requests,omitempty"`
	Reviews    []approval.Review  `json:"reviews,omitempty"`
	Unreadable []store.Problem    `json:"unreadable,omitempty"`
}

// result is the listing l as -o json prints it at now.
func result(l approval.Listing, opts *Options, now time.Time) Result {
	out := Result{Kind: "ChangeRequestList", Unreadable: l.Unreadable}
	if opts.Reviews {
		out.Kind, out.Reviews = "ReviewList", []approval.Review{}
		for _, r := range l.Reviews {
			if opts.All || r.Status == approval.ReviewOpen {
				out.Reviews = append(out.Reviews, r)
			}
		}
		return out
	}
	out.Requests = []requestview.View{}
	for _, r := range l.Requests {
		if opts.All || r.StatusAt(now) == approval.StatusPending {
			out.Requests = append(out.Requests, requestview.Of(r, now))
		}
	}
	return out
}

// list reads what opts lists: the open requests and reviews from the
// lists index (no scan), or, with --all, every one (a scan).
func list(ctx context.Context, env *cmdenv.Env, opts *Options) (approval.Listing, error) {
	if opts.All {
		return env.Approvals().List(ctx)
	}
	return env.Approvals().ListOpen(ctx)
}

// Read lists as -o json prints it, writing nothing: a pending request
// past its expiry reads as expired (and is left out unless opts.All) but
// is not marked so, as `request list` does. The MCP server's
// pending_requests is this.
func Read(ctx context.Context, f *cmdenv.Factory, opts *Options) (Result, error) {
	env, err := f.Env(ctx)
	if err != nil {
		return Result{}, err
	}
	l, err := list(ctx, env, opts)
	if err != nil {
		return Result{}, err
	}
	if l, err = mineOnly(ctx, env, opts, l, f.Clock.Now()); err != nil {
		return Result{}, err
	}
	return result(l, opts, f.Clock.Now()), nil
}

// Run lists.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	l, err := list(ctx, env, opts)
	if err != nil {
		return err
	}
	l.Requests = requestview.Expire(ctx, env, f.IOStreams.ErrOut, l.Requests)
	now := f.Clock.Now()
	if l, err = mineOnly(ctx, env, opts, l, now); err != nil {
		return err
	}
	out := result(l, opts, now)
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, out); err != nil {
			return err
		}
	} else {
		tty := ios.IsStdoutTTY()
		t := cmdutil.NewTable(ios.Out)
		switch {
		case opts.Reviews && len(out.Reviews) == 0:
			fmt.Fprintln(ios.ErrOut, "No open break-glass reviews.")
		case opts.Reviews:
			t.Header(ios, "REVIEW", "STATUS", "ACTION", "TARGETS", "ACTOR", "WHEN", "REASON")
			for _, r := range out.Reviews {
				t.Row(r.ID, requestview.Flagged(r.Status, r.Verification), r.Action, strings.Join(r.Targets, ","), r.Actor,
					cmdutil.FormatTime(r.CreatedAt, now, tty), r.Reason)
			}
		case len(out.Requests) == 0 && opts.WaitingOnMe:
			fmt.Fprintln(ios.ErrOut, "No pending change requests wait on you.")
		case len(out.Requests) == 0 && opts.Mine && opts.All:
			fmt.Fprintln(ios.ErrOut, "No change requests of yours.")
		case len(out.Requests) == 0 && opts.Mine:
			fmt.Fprintln(ios.ErrOut, "No pending change requests of yours.")
		case len(out.Requests) == 0:
			fmt.Fprintln(ios.ErrOut, "No pending change requests.")
		default:
			t.Header(ios, "REQUEST", "STATUS", "CHANGE", "REQUESTER", "APPROVALS", "EXPIRES")
			for _, r := range out.Requests {
				t.Row(r.ID, requestview.Flagged(r.Status, r.Verification), r.Summary, r.Requester, fmt.Sprintf("%d/%d", len(r.Approvers), r.Needed),
					cmdutil.FormatTime(r.ExpiresAt, now, tty))
			}
		}
		if err := t.Flush(); err != nil {
			return err
		}
		for _, p := range out.Unreadable {
			fmt.Fprintf(ios.ErrOut, "unreadable: %s: %s\n", textsafe.Quote(p.PK), textsafe.Line(p.Problem))
		}
	}
	var vs []approval.Verification
	for _, r := range out.Requests {
		vs = append(vs, r.Verification)
	}
	for _, r := range out.Reviews {
		vs = append(vs, r.Verification)
	}
	if err := requestview.Tampered(ios.ErrOut, vs...); err != nil {
		return err
	}
	if len(out.Unreadable) > 0 {
		return exitcode.Wrap(exitcode.Partial, cmdutil.ErrSilent)
	}
	return nil
}
