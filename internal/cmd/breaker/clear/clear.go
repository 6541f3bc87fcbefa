// Package clear implements `koshactl breaker clear`: delete fleet-wide
// forced_open overrides, idempotently.
package clear

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/baking"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/converge"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and arguments.
type Options struct {
	Dependencies []string
	// Keys name override items by pk (--key), for a pk that is not a valid
	// dependency name.
	Keys []string
	// KeysHex are --key values given as hexadecimal bytes (--key-hex): a
	// pk with control characters that no shell line can carry.
	KeysHex      []string
	All          bool
	Reason       string
	AllowUnknown bool
	levercmd.Flags
	converge.WaitOptions
	Bake baking.Options
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "clear [DEPENDENCY...] [--key PK...] [--all]",
		Short: "Clear forced_open overrides so breakers follow their own state again",
		Long: heredoc.Doc(`
			Delete the forced_open override of each dependency. Gateway instances return
			to their own breaker state within their override cache period.

			Clearing a dependency that is not forced succeeds and says so, so scripts and
			CI can clear unconditionally. If someone re-forced the override since it was
			read, nothing is deleted and the command reports the conflict.

			A name this context does not know, with no override stored under it, is
			refused with the closest known name (a typo like open-ai would otherwise
			clear nothing and succeed while openai stays forced); --allow-unknown accepts
			it. An unknown name whose override is stored (one forced with
			--allow-unknown, or a dependency since removed from the context) is cleared
			without the flag: it names an override that breaker list shows.

			A clear of more than 50 overrides does not fit one transaction: it is refused,
			nothing cleared, unless --chunked asks for transactions of 50, each whole.
			--all clears in such chunks by default and says so; every override is
			reported, cleared or not and why, and a clear that cleared some and not
			others exits 16.

			--key names an override item by its pk, for an item written by hand whose pk
			is not a valid dependency name (breaker list names it, with this command):
			it is cleared like any other, conditional on the version read and audited.

			--wait then waits until the fleet's breaker_state gauges confirm it: no reporting
			instance forced (Prometheus), or CloudWatch's fleet Maximum below forced over the
			newest complete minute, within the source's bound (6s on a scrape, 4m05s on
			CloudWatch). The clear and its audit record come first. Not confirmed within
			--timeout exits 11, naming the instances still forced where the source can.

			When the table has a policy (koshactl policy get) that needs approvals for
			this clear, nothing is cleared: the clear becomes a change request, printed
			with the command another person approves it with, and the command exits 12.
			--break-glass (with --reason) acts at once where the policy allows it, and
			leaves a review.

			--bake DURATION then watches the fleet for that long (after --wait, if given):
			the cleared dependencies' breaker_state gauges, and the CloudWatch alarms named
			with --alarm. If the breaker re-opens on more than --reopen-share of the
			instances (default: most), or an alarm is ALARM or INSUFFICIENT_DATA (as AWS
			AppConfig counts them), the override is put back as it was (its reason, what
			is left of its expiry) in one transaction with its record, which names the
			clear's record (rollback_of), announced, and the command exits 15; the fleet
			holding exits 0. An override someone wrote since the clear is left alone
			(exit 4). A source that cannot be read mid-bake ends it without putting back
			(exit 5), and Ctrl-C leaves the clear standing (exit 130): see docs/bake.md.
			A bake longer than the context's max-override, without a readable metrics
			source, or --alarm without CloudWatch, is refused before anything is cleared.
		`),
		Example: heredoc.Doc(`
			koshactl breaker clear openai --reason "provider recovered"
			koshactl breaker clear --all --dry-run
			koshactl breaker clear --key 'breaker#Bad Name' --reason "hand-written item"
			koshactl breaker clear --key-hex 627265616b6572231b5b326a --reason "item with an ESC in its pk"
			koshactl breaker clear openai --reason "provider recovered" --wait
			koshactl breaker clear openai --reason "provider recovered" --bake 10m --alarm kosha-openai-errors
		`),
		ValidArgsFunction: cmdenv.CompleteDependencies(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dependencies = args
			for _, h := range opts.KeysHex {
				pk, err := hex.DecodeString(h)
				if err != nil {
					return cmdutil.Usagef("--key-hex %s is not hexadecimal: give the pk's bytes as breaker list's warning prints them", textsafe.Quote(h))
				}
				opts.Keys = append(opts.Keys, string(pk))
			}
			if opts.All == (len(args)+len(opts.Keys) > 0) {
				return cmdutil.Usagef("name the dependencies to clear (or --key PK), or pass --all (not both)")
			}
			if err := opts.Check(c, opts.DryRun); err != nil {
				return err
			}
			if err := opts.Bake.Check(c, opts.DryRun); err != nil {
				return err
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.All, "all", false, "clear every override in the store")
	fl.StringArrayVar(&opts.Keys, "key", nil, "clear the override item with this pk (breaker#<name>), even if <name> is not a valid dependency name (repeatable)")
	fl.StringArrayVar(&opts.KeysHex, "key-hex", nil, "--key with the pk's bytes in hexadecimal, for a pk holding control characters (as breaker list's warning prints it; repeatable)")
	fl.StringVarP(&opts.Reason, "reason", "r", "", "why (recorded in the audit log)")
	fl.BoolVar(&opts.AllowUnknown, "allow-unknown", false, "accept a dependency this context does not know and that has no override")
	levercmd.AddFlags(cmd, &opts.Flags, "do not ask for confirmation on a protected context")
	converge.AddWaitFlags(cmd, &opts.WaitOptions)
	baking.AddFlags(cmd, &opts.Bake)
	return cmd
}

// Result is the JSON output of clear.
type Result struct {
	cmdenv.Envelope
	DryRun  bool         `json:"dry_run"`
	Results []ItemResult `json:"results"`
	// Convergence is what the gauges said, with --wait only.
	converge.Waited
	// Tally is the break-glass review, the dependencies not cleared and
	// why, and the chunks (--all, --chunked).
	levercmd.Tally
	// Bake is how the fleet held after the clear, with --bake only.
	Bake *baking.View `json:"bake,omitempty"`
}

// ItemResult is what happened to one dependency.
type ItemResult struct {
	Dependency string `json:"dependency"`
	// Action is cleared, already-clear, would-clear.
	Action  string                     `json:"action"`
	Before  *overrideview.OverrideView `json:"before"`
	AuditID string                     `json:"audit_id,omitempty"`
	// ConfirmedByReread is true when the store's answer to the clear was
	// lost and koshactl settled it as landed (docs/contracts/store.md).
	ConfirmedByReread bool `json:"confirmed_by_reread,omitempty"`
	// Chunk is the transaction that cleared it, of a clear written in
	// chunks.
	Chunk int `json:"chunk,omitempty"`
}

// Run clears the overrides: one batch read of every override (while the
// identity resolves; --all's scan has read them already), then the deletes
// with their audit records, one transaction for up to 50 of them.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := audit.ValidateReason(opts.Reason); err != nil {
		return err
	}
	for _, d := range opts.Dependencies {
		if err := depargs.CheckName(f, d); err != nil {
			return err
		}
	}
	targets := slices.Clone(opts.Dependencies)
	for _, k := range opts.Keys {
		dep, err := breaker.DependencyOfKey(k)
		if err != nil {
			return cmdutil.UsageError(err)
		}
		targets = append(targets, dep)
	}
	env, err := levercmd.Env(ctx, f, opts.Flags, opts.Reason)
	if err != nil {
		return err
	}
	waiter, err := opts.Waiter(ctx, f, env)
	if err != nil {
		return err
	}
	ov, err := depargs.Overrides(env)
	if err != nil {
		return err
	}
	ov.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	var bk *baking.Baker
	if opts.Bake.Bake > 0 {
		if bk, err = baking.New(ctx, f, env, opts.Bake, opts.MetricsURL, ov.Durations().MaxFor()); err != nil {
			return err
		}
	}
	c := breaker.Clear(opts.Reason, targets...)
	if opts.All {
		// --all must find every override, including one written by hand
		// without the index attribute, or whose pk is no dependency name;
		// what the guard decides on is read beside the scan.
		var beside []string
		if !opts.DryRun {
			beside = env.Guard().Reads()
		}
		if c, err = ov.ClearAll(ctx, opts.Reason, beside...); err != nil {
			return err
		}
	} else if !opts.AllowUnknown {
		c.Known = env.Context.KnownDependencies()
	}
	now := f.Clock.Now()
	rep, err := levercmd.Change(ctx, f, env, c, opts.Flags)
	if rep.Outcomes == nil || rep.Pending != nil {
		if errors.Is(err, breaker.ErrUnknownDependency) {
			return cmdutil.Usagef("%v, and no override is stored under that name; pass --allow-unknown to clear it anyway", err)
		}
		if rep.Pending != nil && bk != nil {
			// The --bake given here cannot outlive this process: the
			// approval that applies the clear is the one that can bake it.
			fmt.Fprintf(f.IOStreams.ErrOut, "nothing was cleared, so nothing is baked: the approval that applies it can bake it, %s --bake %s\n",
				rep.Pending.ApproveCommand(), human.Duration(opts.Bake.Bake))
		}
		return levercmd.Refused(ctx, f, env, rep, err, opts.Flags)
	}
	out := Result{Envelope: env.Envelope("BreakerClearResult"), DryRun: opts.DryRun, Results: []ItemResult{}}
	var unwritten []levercmd.Unwritten
	cleared := 0
	// A dependency that was not forced is waited on too: no instance
	// should report forced.
	changes := make([]metrics.Change, 0, len(rep.Outcomes))
	for _, o := range rep.Outcomes {
		res := breaker.ClearResultOf(o)
		if !opts.DryRun && !o.Noop && !o.Written {
			// o.Err names the verb and the dependency.
			unwritten = append(unwritten, levercmd.Unwritten{Name: displayName(o.Target), Err: o.Err})
			continue
		}
		item := ItemResult{Dependency: o.Target, Before: overrideview.ViewPtr(res.Before, now), AuditID: o.Record.ID, Action: "cleared",
			ConfirmedByReread: o.Confirmed, Chunk: o.Chunk}
		switch {
		case res.Before == nil:
			item.Action = "already-clear"
		case opts.DryRun:
			item.Action = "would-clear"
		default:
			cleared++
		}
		out.Results = append(out.Results, item)
		changes = append(changes, metrics.Change{Dependency: o.Target, Goal: metrics.GoalReleased, Since: now})
	}
	out.Tally = levercmd.TallyOf(rep, unwritten)
	failure := levercmd.Failure(cleared+len(unwritten), cleared, unwritten, "overrides", "koshactl breaker get DEPENDENCY")
	var then func() error
	if bk != nil {
		then = func() error {
			out.Bake = &baking.View{}
			return bk.Run(ctx, env, rep.Outcomes, now, out.Bake, f.IOStreams.Out, opts.Table())
		}
	}
	return converge.Finish(ctx, f, env, opts.Flags, waiter, changes, rep.Event, failure, &out, &out.Waited, table(opts, out, len(rep.Outcomes) == 0), then)
}

// table is out's lines for the human output; none is true when there was
// no override to clear (--all on an empty table).
func table(opts *Options, out Result, none bool) string {
	var w strings.Builder
	if none && opts.All {
		fmt.Fprintln(&w, "No overrides to clear.")
	}
	for _, r := range out.Results {
		name := displayName(r.Dependency)
		if r.Action == "already-clear" {
			fmt.Fprintf(&w, "%s was not forced open: nothing to clear\n", name)
			continue
		}
		verb := map[string]string{"cleared": "Cleared", "would-clear": "Would clear"}[r.Action]
		note := ""
		if !r.Before.Active {
			note = " (it had already expired)"
		}
		if len(r.Before.Malformed) > 0 {
			note += " (a malformed item, removed as it was stored)"
		}
		fmt.Fprintf(&w, "%s override on %s set by %s%s\n", verb, name, textsafe.Line(r.Before.Actor), note)
		levercmd.Confirmed(&w, r.ConfirmedByReread)
	}
	out.PrintUnder(&w, len(out.Results))
	return w.String()
}

// displayName is how the output names a cleared item: its dependency, or
// its quoted key when that is no valid dependency name (named by --key).
func displayName(dep string) string {
	if breaker.ValidateDependency(dep) != nil {
		return textsafe.Quote(breaker.OverrideKey(dep))
	}
	return dep
}
