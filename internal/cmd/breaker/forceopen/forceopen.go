// Package forceopen implements `koshactl breaker force-open`: set the
// fleet-wide forced_open override of one or more dependencies.
package forceopen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/converge"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and arguments.
type Options struct {
	Dependencies []string
	Reason       string
	For          time.Duration
	Until        string
	NoExpiry     bool
	Overwrite    bool
	AllowUnknown bool
	levercmd.Flags
	converge.WaitOptions
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

			The dependencies named are forced in one transaction (all or none), up to 50 of
			them; more is refused, nothing forced, unless --chunked asks for transactions of
			50, each whole. Every dependency is then reported, forced or not and why, and a
			force that forced some and not others exits 16.

			When the table has a policy (koshactl policy get) that needs approvals for
			this change, nothing is forced: the change becomes a change request, printed
			with the command another person approves it with, and the command exits 12.
			--break-glass acts at once where the policy allows it, and leaves a review.

			The result shows what forcing the dependencies does to the platform's tools (the
			degradation matrix, LLD §8: which tools are degraded, deferred or failed, and what a
			client sees), on a dry run too; with a metrics source (--metrics-url, or the
			context's metrics setting) each tool's live call rate and the calls touched while
			the override holds ("about 750 screenings deferred over 30m"). A source that cannot
			be read leaves the matrix's impact and says so; it never stops the force. The audit
			record keeps the rates seen.

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
			koshactl breaker force-open screening-sim --reason "planned" --dry-run --metrics-url http://127.0.0.1:8787/metrics
			koshactl breaker force-open openai --reason "provider incident INC-142" --wait
		`),
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cmdenv.CompleteDependencies(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dependencies = args
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
	levercmd.AddFlags(cmd, &opts.Flags, "do not ask for confirmation (protected contexts, --no-expiry)")
	cmd.MarkFlagsMutuallyExclusive("for", "until", "no-expiry")
	converge.AddWaitFlags(cmd, &opts.WaitOptions)
	return cmd
}

// Result is the JSON output of force-open.
type Result struct {
	cmdenv.Envelope
	DryRun  bool         `json:"dry_run"`
	Results []ItemResult `json:"results"`
	// Convergence is what the gauges said, with --wait only.
	converge.Waited
	// Tally is the break-glass review, the dependencies not written and
	// why, and the chunks.
	levercmd.Tally
	// Impact is what forcing the dependencies does to the platform's tools
	// (docs/contracts/degradation-matrix.md, "The impact section").
	Impact json.RawMessage `json:"impact,omitempty"`

	impact lever.Impact
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
	// Chunk is the transaction that wrote it, of a change written in
	// chunks.
	Chunk int `json:"chunk,omitempty"`

	res breaker.ForceResult
}

// Run forces the overrides: every argument is checked, and every current
// override read (in one batch, with the table's policy, while the caller's
// identity resolves), before the first write, so bad input or a conflict
// changes nothing; the writes and their audit records then go in one
// transaction. Results print in argument order.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := levercmd.Env(ctx, f, opts.Flags, opts.Reason)
	if err != nil {
		return err
	}
	ov, err := depargs.Overrides(env)
	if err != nil {
		return err
	}
	c, err := ov.ForceRequested(breaker.ForceRequest{Reason: opts.Reason, Dependencies: opts.Dependencies, For: opts.For, Until: opts.Until,
		NoExpiry: opts.NoExpiry, Yes: opts.Yes, Overwrite: opts.Overwrite, Known: env.Context.KnownDependencies(), AllowUnknown: opts.AllowUnknown})
	if err != nil {
		return err
	}
	waiter, err := opts.Waiter(ctx, f, env)
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	rep, err := levercmd.Change(ctx, f, env, c, opts.Flags)
	if rep.Outcomes == nil || rep.Pending != nil {
		return conflictHint(levercmd.Refused(ctx, f, env, rep, err, opts.Flags))
	}
	out := Result{Envelope: env.Envelope("BreakerForceResult"), DryRun: opts.DryRun, Results: []ItemResult{}, Impact: levercmd.ImpactJSON(rep.Impact), impact: rep.Impact}
	var unwritten []levercmd.Unwritten
	changes := make([]metrics.Change, 0, len(rep.Outcomes))
	for _, o := range rep.Outcomes {
		res := breaker.ForceResultOf(o)
		if !opts.DryRun && !o.Written {
			// o.Err names the verb and the dependency.
			unwritten = append(unwritten, levercmd.Unwritten{Name: o.Target, Err: conflictHint(o.Err)})
			continue
		}
		out.Results = append(out.Results, ItemResult{Dependency: o.Target, Action: action(res, opts.DryRun),
			Override: overrideview.View(res.After, now), Before: overrideview.ViewPtr(res.Before, now), AuditID: o.Record.ID, ConfirmedByReread: o.Confirmed,
			Chunk: o.Chunk, res: res})
		since := res.After.CreatedAt
		if since.IsZero() {
			since = now
		}
		changes = append(changes, metrics.Change{Dependency: o.Target, Goal: metrics.GoalForced, Since: since})
	}
	out.Tally = levercmd.TallyOf(rep, unwritten)
	failure := levercmd.Failure(len(rep.Outcomes), len(rep.Written()), unwritten, "overrides", "koshactl breaker get DEPENDENCY")
	return converge.Finish(ctx, f, env, opts.Flags, waiter, changes, rep.Event, failure, &out, &out.Waited, table(out, now, f.IOStreams.IsStdoutTTY()), nil)
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

// table is the result's lines for the human output.
func table(out Result, now time.Time, tty bool) string {
	var w strings.Builder
	for _, r := range out.Results {
		verb := map[string]string{"forced": "Forced open", "replaced": "Replaced override, forced open",
			"would-force": "Would force open", "would-replace": "Would replace override, force open"}[r.Action]
		exp := "never expires"
		if r.res.After.Expires() {
			exp = "expires " + cmdutil.FormatTime(r.res.After.ExpiresAt, now, tty)
		}
		fmt.Fprintf(&w, "%s %s (%s) — reason: %s\n", verb, r.Dependency, exp, textsafe.Line(r.Override.Reason))
		levercmd.Confirmed(&w, r.ConfirmedByReread)
		if r.Before != nil && r.Before.Active {
			fmt.Fprintf(&w, "  previously forced by %s: %s\n", textsafe.Line(r.Before.Actor), textsafe.Line(r.Before.Reason))
		}
		if r.Before != nil && len(r.Before.Malformed) > 0 {
			fmt.Fprintf(&w, "  replaced a malformed item (%s: %s)\n", r.Before.Malformed[0].Attribute, textsafe.Line(r.Before.Malformed[0].Problem))
		}
	}
	out.PrintUnder(&w, len(out.Results))
	if len(out.Results) > 0 {
		levercmd.Impact(&w, out.impact)
	}
	return w.String()
}
