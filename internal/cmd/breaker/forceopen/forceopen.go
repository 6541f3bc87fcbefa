// Package forceopen implements `koshactl breaker force-open`: set the
// fleet-wide forced_open override of one or more dependencies.
package forceopen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/converge"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/levertail"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levergate"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and arguments.
type Options struct {
	Dependencies []string
	Reason       string
	For          time.Duration
	ForSet       bool
	Until        string
	NoExpiry     bool
	Overwrite    bool
	AllowUnknown bool
	DryRun       bool
	Yes          bool
	NoNotify     bool
	Output       string
	converge.WaitOptions
	Policy levergate.Flags
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "force-open DEPENDENCY...",
		Short: "Force dependencies' breakers open across the whole fleet",
		Long: heredoc.Doc(`
			Write the fleet-wide forced_open override of each dependency. Every gateway
			instance sees it within its override cache period (5 s) and fails calls to
			that dependency fast, as if its breaker were open.

			A reason is required. The override expires after --for (default 1h) or at
			--until, at least 5s away (the override cache period: a shorter override
			lapses before the fleet reads it) and capped by the context's max-override;
			--no-expiry needs --yes.
			An override already set by someone else is a conflict unless --overwrite.

			When the table has a policy (koshactl policy get) that needs approvals for
			this change, nothing is forced: the change becomes a change request, printed
			with the command another person approves it with, and the command exits 12.
			--break-glass acts at once where the policy allows it, and leaves a review.

			--wait then waits until the fleet's breaker_state gauges confirm it: forced (3) on
			every reporting instance of a Prometheus source, or CloudWatch's fleet Minimum
			forced over the newest complete minute (judged within the source's bound: 6s on a
			scrape, 4m05s on CloudWatch). A terminal shows a live progress line on stderr.
			The override and its audit record are written first; the wait never delays them.
			Not confirmed within --timeout exits 11, naming the instances that do not obey
			where the source can (CloudWatch: with --instances).
		`),
		Example: heredoc.Doc(`
			koshactl breaker force-open openai --reason "provider incident INC-142" --for 30m
			koshactl breaker force-open core-api screening-sim --reason "failover drill" --until 2026-11-29T18:00:00Z
			koshactl breaker force-open openai --reason "planned" --dry-run -o json
			koshactl breaker force-open openai --reason "provider incident INC-142" --wait
		`),
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cmdenv.CompleteDependencies(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dependencies = args
			opts.ForSet = c.Flags().Changed("for")
			if err := opts.Check(c, opts.DryRun); err != nil {
				return err
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Reason, "reason", "r", "", "why (required; shown to everyone who reads the override)")
	opts.For = breaker.DefaultFor
	fl.Var(human.DurationFlag{D: &opts.For}, "for", "how long the override lasts")
	fl.StringVar(&opts.Until, "until", "", "when the override lapses (RFC3339, e.g. 2026-11-29T18:00:00Z)")
	fl.BoolVar(&opts.NoExpiry, "no-expiry", false, "never expire (requires --yes)")
	fl.BoolVar(&opts.Overwrite, "overwrite", false, "replace an active override set by someone else")
	fl.BoolVar(&opts.AllowUnknown, "allow-unknown", false, "accept a dependency this context does not know")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change; write nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (protected contexts, --no-expiry)")
	cmd.MarkFlagsMutuallyExclusive("for", "until", "no-expiry")
	levergate.AddFlags(cmd, &opts.Policy)
	converge.AddWaitFlags(cmd, &opts.WaitOptions)
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output of force-open.
type Result struct {
	Kind    string       `json:"kind"`
	Context string       `json:"context"`
	Store   string       `json:"store"`
	DryRun  bool         `json:"dry_run"`
	Results []ItemResult `json:"results"`
	// Convergence is what the gauges said, with --wait only.
	Convergence *converge.ConvergenceView `json:"convergence,omitempty"`
	// Review is the review a --break-glass change opened.
	Review string `json:"review,omitempty"`
}

// ItemResult is what happened to one dependency.
type ItemResult struct {
	Dependency string `json:"dependency"`
	// Action is forced, replaced, would-force or would-replace.
	Action   string                     `json:"action"`
	Override overrideview.OverrideView  `json:"override"`
	Before   *overrideview.OverrideView `json:"before"`
	AuditID  string                     `json:"audit_id,omitempty"`
	// ConfirmedByReread is true when the store's answer was lost and a
	// re-read found the override this command wrote.
	ConfirmedByReread bool `json:"confirmed_by_reread,omitempty"`

	res breaker.ForceResult
}

// expiry applies breaker's duration policy to the flags and words its
// refusal for them.
func (o *Options) expiry(now time.Time, policy breaker.DurationPolicy) (time.Time, time.Duration, error) {
	l := breaker.LastFor(o.For)
	switch {
	case o.NoExpiry:
		if !o.Yes {
			return time.Time{}, 0, cmdutil.Usagef("--no-expiry leaves the fleet degraded until someone clears it: add --yes to confirm, or use --for")
		}
		l = breaker.NoExpiry()
	case o.Until != "":
		t, err := time.Parse(time.RFC3339, o.Until)
		if err != nil {
			return time.Time{}, 0, cmdutil.Usagef("--until %q is not an RFC3339 time: write it like 2026-11-29T18:00:00Z", o.Until)
		}
		l = breaker.LastUntil(t)
	}
	expires, forDur, err := policy.ExpiresAt(now, l)
	var de *breaker.DurationError
	if !errors.As(err, &de) {
		return expires, forDur, err
	}
	if o.Until != "" {
		switch de.Problem {
		case breaker.ErrExpiryPast:
			return time.Time{}, 0, cmdutil.Usagef("--until %s is in the past: give a future time, or use --for", o.Until)
		case breaker.ErrDurationTooShort:
			return time.Time{}, 0, cmdutil.Usagef("--until %s: %v; give a time at least %s away", o.Until, err, human.Duration(breaker.MinOverride))
		}
		return time.Time{}, 0, cmdutil.Usagef("--until is %s away, over this context's max-override of %s: pick an earlier time", human.Age(de.Duration), de.Limit)
	}
	switch de.Problem {
	case breaker.ErrDurationNotPositive:
		return time.Time{}, 0, cmdutil.Usagef("--for %s is not positive: give a duration like 30m or 2h", human.Duration(o.For))
	case breaker.ErrDurationTooShort:
		return time.Time{}, 0, cmdutil.Usagef("--for %v; use --for %s or more", err, human.Duration(breaker.MinOverride))
	}
	return time.Time{}, 0, cmdutil.Usagef("--for %s is over this context's max-override of %s: use a shorter duration (or raise max-override with koshactl config set-context)", human.Duration(o.For), human.Duration(de.Limit))
}

// Run forces the overrides with breaker.Overrides.ForceAll: every argument
// is checked, and every current override read (in one batch, while the
// caller's identity resolves), before the first write, so bad input or a
// conflict changes nothing; the writes and their audit records then go
// concurrently. Results print in argument order.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := breaker.CheckForceReason(opts.Reason); err != nil {
		if errors.Is(err, breaker.ErrReasonRequired) {
			return cmdutil.Usagef("a reason is required: pass --reason \"what is happening\" (it is shown to everyone who looks at this override)")
		}
		return err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	now := f.Clock.Now()
	expires, forDur, err := opts.expiry(now, env.Context.OverridePolicy())
	if err != nil {
		return err
	}
	var waiter *metrics.Waiter
	if opts.Wait {
		if waiter, err = opts.NewWaiter(ctx, f, env); err != nil {
			return err
		}
	}
	if err := opts.Policy.Check(); err != nil {
		return err
	}
	if opts.Policy.BreakGlass && opts.DryRun {
		return cmdutil.Usagef("--break-glass with --dry-run: a dry run changes nothing, so it needs no break-glass; drop one")
	}
	var gate *levergate.Gate
	if !opts.DryRun {
		gate = levergate.New(ctx, env, levergate.Question{Action: breaker.ActionForceOpen, Targets: opts.Dependencies,
			Duration: policyDuration(now, forDur, expires), NoExpiry: opts.NoExpiry, Reason: opts.Reason, Flags: opts.Policy})
	}
	reqs := make([]breaker.ForceRequest, 0, len(opts.Dependencies))
	for _, dep := range opts.Dependencies {
		reqs = append(reqs, breaker.ForceRequest{Dependency: dep, Reason: opts.Reason, ExpiresAt: expires, For: forDur, NoExpiry: opts.NoExpiry, Overwrite: opts.Overwrite})
	}
	op := breaker.ForceAll{Requests: reqs, Actor: env.Actor, DryRun: opts.DryRun, Known: depargs.Known(env, opts.AllowUnknown), NoNotify: opts.NoNotify,
		Confirm: func(plans []breaker.ForceResult) error {
			return cmdenv.ConfirmProtected(ctx, f, env, opts.Yes, "force open "+human.Count(int64(len(plans)), "breaker override"))
		}}
	if gate != nil {
		op.Gate = gate.Breaker()
	}
	outcomes, err := env.Overrides().ForceAll(ctx, op)
	if errors.Is(err, levergate.ErrNeedsApproval) {
		// Read and checked as a force would be; asked for, not made.
		change, err := approval.ForceChange(opts.Reason, forDur, expires, opts.NoExpiry, opts.Overwrite, opts.Dependencies, gate.Befores)
		if err != nil {
			return err
		}
		return levergate.Submit(ctx, f, env, gate, change, opts.Policy, opts.Output, opts.NoNotify)
	}
	if outcomes == nil {
		return conflictHint(depargs.DependencyHint(err))
	}
	out := Result{Kind: "BreakerForceResult", Context: env.Name, Store: env.Store.Describe(), DryRun: opts.DryRun}
	var unwritten []levertail.Unwritten
	for _, o := range outcomes {
		if !opts.DryRun && !o.Written {
			// o.Err names the verb and the dependency.
			unwritten = append(unwritten, levertail.Unwritten{Name: o.Result.After.Dependency, Err: conflictHint(o.Err)})
			continue
		}
		res := o.Result
		out.Results = append(out.Results, ItemResult{Dependency: res.After.Dependency, Action: action(res, opts.DryRun),
			Override: overrideview.View(res.After, now), Before: overrideview.ViewPtr(res.Before, now), AuditID: o.Record.ID, ConfirmedByReread: res.Confirmed, res: res})
	}
	failure := levertail.Failure(len(outcomes), len(out.Results), unwritten)
	changes := make([]metrics.Change, 0, len(out.Results))
	for _, r := range out.Results {
		since := r.res.After.CreatedAt
		if since.IsZero() {
			since = now
		}
		changes = append(changes, metrics.Change{Dependency: r.Dependency, Goal: metrics.GoalForced, Since: since})
	}
	if gate != nil && gate.Review != nil && len(out.Results) > 0 {
		out.Review = gate.Review.ID
	}
	return levertail.Finish(ctx, f, levertail.Tail{Env: env, Table: opts.Output == cmdutil.FormatTable,
		Waiter: waiter, Changes: changes, Failure: failure,
		Print: func(view *converge.ConvergenceView) error {
			out.Convergence = view
			return printResult(f, opts, env, out, now, gate)
		}})
}

// policyDuration is how long the override lasts as the policy judges it:
// --for, or the time left until --until (0 without expiry).
func policyDuration(now time.Time, forDur time.Duration, expires time.Time) time.Duration {
	if forDur > 0 {
		return forDur
	}
	if !expires.IsZero() {
		return expires.Sub(now)
	}
	return 0
}

func conflictHint(err error) error {
	var ce *breaker.ConflictError
	switch {
	case !errors.As(err, &ce) || ce.Raced:
	case ce.Current.Malformed():
		return fmt.Errorf("%w: pass --overwrite to replace it, or remove it with koshactl breaker clear %s", err, ce.Current.Dependency)
	default:
		return fmt.Errorf("%w: pass --overwrite to replace it, or coordinate with %s", err, ce.Current.Actor)
	}
	return err
}

func action(r breaker.ForceResult, dry bool) string {
	a := "forced"
	if r.Replaced {
		a = "replaced"
	}
	if dry {
		return "would-" + map[string]string{"forced": "force", "replaced": "replace"}[a]
	}
	return a
}

func printResult(f *cmdenv.Factory, opts *Options, env *cmdenv.Env, out Result, now time.Time, gate *levergate.Gate) error {
	tty := f.IOStreams.IsStdoutTTY()
	return levertail.Print(f, env, opts.Output, opts.DryRun, out, func(w io.Writer) {
		for _, r := range out.Results {
			verb := map[string]string{"forced": "Forced open", "replaced": "Replaced override, forced open",
				"would-force": "Would force open", "would-replace": "Would replace override, force open"}[r.Action]
			exp := "never expires"
			if r.res.After.Expires() {
				exp = "expires " + cmdutil.FormatTime(r.res.After.ExpiresAt, now, tty)
			}
			fmt.Fprintf(w, "%s %s (%s) — reason: %s\n", verb, r.Dependency, exp, textsafe.Line(r.Override.Reason))
			levertail.Confirmed(w, r.ConfirmedByReread)
			if r.Before != nil && r.Before.Active {
				fmt.Fprintf(w, "  previously forced by %s: %s\n", textsafe.Line(r.Before.Actor), textsafe.Line(r.Before.Reason))
			}
			if r.Before != nil && len(r.Before.Malformed) > 0 {
				fmt.Fprintf(w, "  replaced a malformed item (%s: %s)\n", r.Before.Malformed[0].Attribute, textsafe.Line(r.Before.Malformed[0].Problem))
			}
		}
		if len(out.Results) > 0 {
			gate.PrintBreakGlass(w)
		}
	})
}
