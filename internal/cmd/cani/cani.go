// Package cani implements `koshactl can-i ACTION TARGET`: the table's
// policy's decision for a change by the caller, with the approvals it
// would need, without making it (kubectl auth can-i's shape).
package cani

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and arguments.
type Options struct {
	Action, Target string
	For            time.Duration
	NoExpiry       bool
	BreakGlass     bool
	Output         string
	// ForSet is whether --for was given.
	ForSet bool
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{For: breaker.DefaultFor}
	cmd := &cobra.Command{
		Use:   "can-i ACTION TARGET",
		Short: "Ask the table's policy whether you may make a change, and with how many approvals, without making it",
		Long: heredoc.Doc(`
			Ask the table's change policy what it says of ACTION on TARGET by you (the
			identity koshactl whoami shows), exactly as the lever command would ask it:
			allowed, needs approvals (how many, from people other than you, and which
			policies), or denied (why). Nothing is read but the policy item, and nothing is
			written. ACTION is a lever's action as the policy and the records name it
			(breaker.force-open, breaker.clear, ratelimit.reset, freeze.lift, ...: an
			unknown one is answered with the list; freeze.set, which the policy is never
			asked about, is always allowed by it); TARGET is the dependency, the client,
			or fleet for the freeze.

			A force is asked about for --for (default 1h, as breaker force-open), or
			--no-expiry; --break-glass asks whether you may act at once without
			approvals (on a table without a policy there is nothing to break: exit 2, as
			the lever command). TARGET is not looked up: a name the lever command would
			refuse is still answered for. The IAM role your credentials have is not asked:
			a change the policy allows may still be denied by AWS.

			Exit codes (as kubectl auth can-i): 0 when the change is allowed as asked; 1
			when it needs approvals or is denied (-o json says which); 2 for an action no
			lever has (or --break-glass without a policy); 7 for a policy item koshactl
			cannot read.
		`),
		Example: heredoc.Doc(`
			koshactl can-i breaker.force-open openai --for 30m
			koshactl can-i breaker.clear openai --break-glass
			koshactl can-i ratelimit.reset agent-1 -o json
		`),
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Action, opts.Target = args[0], args[1]
			opts.ForSet = c.Flags().Changed("for")
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.Var(human.DurationFlag{D: &opts.For}, "for", "how long the force would last (breaker.force-open)")
	fl.BoolVar(&opts.NoExpiry, "no-expiry", false, "ask about a force that never expires")
	fl.BoolVar(&opts.BreakGlass, "break-glass", false, "ask whether you may act at once, without approvals")
	cmd.MarkFlagsMutuallyExclusive("for", "no-expiry")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output.
type Result struct {
	cmdenv.Envelope
	Action string `json:"action"`
	Target string `json:"target"`
	Actor  string `json:"actor"`
	// Allowed: the change goes as asked.
	Allowed bool `json:"allowed"`
	// Decision is allow, needs-approval or deny.
	Decision string `json:"decision"`
	// Approvals is how many approvals from other people it needs.
	Approvals int      `json:"approvals,omitempty"`
	Policies  []string `json:"policies"`
	Reason    string   `json:"reason"`
	// Policy says whether the table has one (none: every change goes).
	Policy bool `json:"policy"`
}

// Run asks the policy.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	sch := env.PolicySchema()
	// An unguarded action (a freeze's set) is a lever's too: the policy is
	// never asked about it.
	_, act, known := env.Kinds.Action(opts.Action)
	unguarded := known && act.Unguarded
	if sch.Resource(opts.Action) == "" && !unguarded {
		return cmdutil.Usagef("%s is no lever's action: use one of %s", textsafe.Quote(opts.Action), strings.Join(actions(env, sch), ", "))
	}
	if err := textsafe.Check(opts.Target); err != nil || opts.Target == "" {
		return cmdutil.Usagef("TARGET %s is not a dependency or client name: give one", textsafe.Quote(opts.Target))
	}
	if opts.Action != breaker.ActionForceOpen && (opts.NoExpiry || opts.ForSet) {
		return cmdutil.Usagef("--for and --no-expiry are a force's: %s lasts no time", opts.Action)
	}
	id, err := env.CallerIdentity(ctx)
	if err != nil {
		return err
	}
	stored, err := env.Policies().Load(ctx)
	if err != nil {
		return err
	}
	req := policy.Request{Actor: policy.Actor{ARN: id.Actor, Verified: id.Verified()}, Action: opts.Action, Target: opts.Target,
		BreakGlass: opts.BreakGlass}
	if opts.Action == breaker.ActionForceOpen {
		req.Duration, req.NoExpiry = opts.For, opts.NoExpiry
	}
	if stored == nil && opts.BreakGlass && !unguarded {
		// As the lever command answers it: there is no glass to break.
		return approval.ErrNothingToBreak
	}
	d := policy.Decide(stored.Rules(), req)
	if unguarded {
		// As the lever service: the policy is not asked.
		d = policy.Decision{Outcome: policy.Allow, Reason: opts.Action + " is never asked of the table's policy: it only makes the fleet safer"}
	}
	out := Result{Envelope: env.Envelope("PolicyDecision"), Action: opts.Action, Target: opts.Target, Actor: id.Actor,
		Allowed: d.Outcome == policy.Allow, Decision: d.Outcome.String(), Approvals: d.Approvals,
		Policies: append([]string{}, d.Policies...), Reason: d.Reason, Policy: stored != nil}
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, out); err != nil {
			return err
		}
	} else {
		switch d.Outcome {
		case policy.Allow:
			fmt.Fprintf(ios.Out, "yes: %s\n", textsafe.Line(d.Reason))
		case policy.NeedsApproval:
			fmt.Fprintf(ios.Out, "not alone: %s; the command would store a change request for another person to approve (exit 12)\n", textsafe.Line(d.Reason))
		default:
			fmt.Fprintf(ios.Out, "no: %s\n", textsafe.Line(d.Reason))
		}
		fmt.Fprintf(ios.ErrOut, "asked as %s on %s\n", textsafe.Line(id.Actor), env.Describe())
	}
	if d.Outcome != policy.Allow {
		return exitcode.Wrap(exitcode.Error, cmdutil.ErrSilent)
	}
	return nil
}

// actions are what can-i asks about: the actions the table's policy
// judges, and the unguarded ones it never asks about, sorted.
func actions(env *cmdenv.Env, sch *policy.Schema) []string {
	out := sch.Actions()
	if env.Kinds != nil {
		for _, sp := range env.Kinds.Specs() {
			for _, a := range sp.Actions {
				if a.Unguarded && !a.Internal {
					out = append(out, a.Name)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
