// Package apply implements `koshactl apply -f FILE`: make the table match a
// levers file for the overrides the file manages, in one transaction, once
// or (--watch) every interval, as a reconciler.
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/baking"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmd/levers/leversview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/levers"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultInterval is how often --watch reconciles.
const DefaultInterval = time.Minute

// writeTimeout bounds one round's write: a stop signal during it waits for
// the write's outcome rather than cutting it.
const writeTimeout = 30 * time.Second

// Options are the parsed flags.
type Options struct {
	File     string
	DryRun   bool
	Watch    bool
	Interval time.Duration
	Output   string
	NoNotify bool
	Yes      bool
	// Request asks for the approval of each window in force or to come,
	// on a table whose policy needs it, instead of applying.
	Request bool
	// Chunked lets a round of more changes than one transaction holds be
	// written in transactions of 50, each whole (--chunked).
	Chunked bool
	// Bake watches the fleet after the round's clears (windows that
	// ended) and puts an override back that did not hold.
	Bake       baking.Options
	MetricsURL string
}

// Result is one round's document (docs/contracts/cli-output.md).
type Result struct {
	leversview.Header
	DryRun      bool                    `json:"dry_run"`
	Round       int                     `json:"round"`
	Differences []leversview.Difference `json:"differences"`
	Results     []ItemResult            `json:"results"`
	// heldBack: the table's policy held back every change of the round
	// (the table output says how to ask).
	heldBack bool
	// NotWritten lists every change of the round not written, and why.
	NotWritten []levercmd.NotWritten `json:"not_written"`
	// Chunks says how a round written in chunks went (none: one
	// transaction).
	Chunks *levercmd.Chunks `json:"chunks,omitempty"`
	// Bake is how the fleet held after the round's clears, with --bake.
	Bake *baking.View `json:"bake,omitempty"`
}

// ItemResult is one lever apply moved (or, on a dry run, would move).
type ItemResult struct {
	Dependency string                     `json:"dependency"`
	Action     string                     `json:"action"`
	Window     string                     `json:"window,omitempty"`
	Override   *overrideview.OverrideView `json:"override,omitempty"`
	Before     *overrideview.OverrideView `json:"before"`
	AuditID    string                     `json:"audit_id,omitempty"`
	// Impact is what a window's force does to the platform's tools (a dry
	// run's would-force; docs/contracts/degradation-matrix.md).
	Impact json.RawMessage `json:"impact,omitempty"`

	impact lever.Impact
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Make the table match a levers file for the overrides it manages",
		Long: heredoc.Doc(`
			Force each window in force that has no override (until the window's end: an
			override written for a window lapses with it even if nothing clears it), replace
			one written for a window since edited, and clear each override the file manages
			whose window ended or was removed. All of it is one transaction (conditional on
			the overrides as read: an operator acting meanwhile makes the round a conflict,
			nothing written), each change with its audit record, and announced like any
			lever change. A round of more than 50 changes does not fit one transaction: it
			is refused, nothing written, unless --chunked asks for transactions of 50, each
			whole; every change is then reported, written or not and why, and a round that
			wrote some and not others exits 16. An override the file does not manage (an incident lever, another
			file's window) is never touched: koshactl diff shows it.

			apply is idempotent: run it from a scheduled CI job, or with --watch as a small
			always-on reconciler (a window opens within one --interval of its start and
			closes within one of its end). Ctrl-C or SIGTERM stops --watch between rounds,
			never in the middle of a write.

			On a table with a change policy (koshactl policy get), a window the policy needs
			approvals for is applied only with its approved request: apply --request asks for
			one per window in force or to come (open it with the pull request), named by the
			window's exact content and occurrence, waiting until the window ends; another
			person approves it (koshactl request approve ID); apply then forces the window,
			its records naming the requester, the approvers and who applied it. A window
			edited since is another request: the old approval does not apply it. A managed
			override the policy does not let apply clear is left to lapse at its window's end.

			Exit codes: 0 applied (or nothing to do); 2 the file has problems; 4 someone
			changed an override meanwhile (nothing written; run again); 5 the store could
			not be reached; 7 refused (a protected context without --yes, a window the
			policy denies); 8 the outcome of the write is unknown; 12 a window waits for
			its approvals (--request: a request waits); 13 its request expired or was
			closed; 14 its request is for other content. Windows that may go are applied
			whatever the others' answer.

			--bake DURATION watches the fleet after the round's clears (windows that ended
			or were removed), as breaker clear --bake does (docs/bake.md): an override whose
			breaker re-opens on most instances, or when an --alarm goes bad, is put back as
			it was (what is left of its expiry: a window's override that reached its end is
			not put back) and apply exits 15. Not with --watch or --dry-run.
		`),
		Example: heredoc.Doc(`
			koshactl apply -f levers/prod.yaml --dry-run
			koshactl apply -f levers/prod.yaml --yes
			koshactl apply -f levers/prod.yaml --watch --interval 1m --yes -o json
			koshactl apply -f levers/prod.yaml --request   # on a table whose policy needs approvals
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Bake.Check(c, opts.DryRun); err != nil {
				return err
			}
			if c.Flags().Changed("metrics-url") && !c.Flags().Changed("bake") {
				return cmdutil.Usagef("--metrics-url only applies with --bake: add --bake DURATION, or drop --metrics-url")
			}
			if c.Flags().Changed("bake") && (opts.Watch || opts.Request) {
				return cmdutil.Usagef("--bake watches the fleet once, after one round's clears: drop --watch and --request, or --bake")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.File, "file", "f", "", "the levers file")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change, change nothing")
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "reconcile every --interval until stopped")
	opts.Interval = DefaultInterval
	fl.Var(human.DurationFlag{D: &opts.Interval}, "interval", "how often --watch reconciles (1s or more)")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (protected contexts)")
	fl.BoolVar(&opts.Request, "request", false, "ask for the approval of each window in force or to come (a table whose policy needs it); apply nothing")
	levercmd.AddChunkedFlag(cmd, &opts.Chunked)
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	baking.AddFlags(cmd, &opts.Bake)
	fl.StringVar(&opts.MetricsURL, "metrics-url", "", "with --bake, scrape this Prometheus endpoint instead of the context's metrics source")
	return cmd
}

// Run applies once, or every interval with --watch.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if opts.Watch && opts.Interval < time.Second {
		return cmdutil.Usagef("--interval %s is too short: use 1s or more (1m is the default)", opts.Interval)
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	file, err := leversview.Load(env, opts.File)
	if err != nil {
		return err
	}
	if opts.Request {
		if opts.Watch || opts.DryRun {
			return cmdutil.Usagef("--request asks for approvals once: drop --watch and --dry-run")
		}
		return requestWindows(ctx, f, env, file, opts)
	}
	if opts.Watch && env.Context.Protected && !opts.Yes && !opts.DryRun {
		return exitcode.Errorf(exitcode.Refused, "context %q is protected: --watch asks no question each round; pass --yes", env.Name)
	}
	var bk *baking.Baker
	if opts.Bake.Bake > 0 {
		ov, err := depargs.Overrides(env)
		if err != nil {
			return err
		}
		if bk, err = baking.New(ctx, f, env, opts.Bake, opts.MetricsURL, ov.Durations().MaxFor()); err != nil {
			return err
		}
	}
	for round := 1; ; round++ {
		err := runRound(ctx, f, env, file, opts, round, bk)
		if !opts.Watch {
			return err
		}
		if ctx.Err() != nil {
			return nil // stopped between rounds: watching ended normally
		}
		if err != nil {
			// A round that failed leaves the table as it was: say so, try again.
			fmt.Fprintf(f.IOStreams.ErrOut, "warning: round %d: %s\n", round, textsafe.Line(err.Error()))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clock.After(f.Clock, opts.Interval):
		}
	}
}

// runRound reads the overrides, compares them with the file, and writes
// what makes the table match it in one transaction: two round trips, the
// overrides, the table's policy and the requests of the windows in force
// read together while who acts resolves, then the write (and, between
// them, the records of the overrides whose marker names the file, when there are
// any: [levers.File.Written]).
func runRound(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, file *levers.File, opts *Options, round int, bk *baking.Baker) error {
	now := f.Clock.Now()
	var (
		extra []string // what authorize decides on: the policy, the windows' requests (and the freeze, always)
		id    audit.Identity
		idErr error // reported only where the policy needs who acts
		wg    sync.WaitGroup
	)
	if !opts.DryRun {
		var inForce []approval.Window
		for _, w := range file.Windows {
			if start, _, ok := w.At(now); ok { // as levers.Compare finds it in force
				inForce = append(inForce, file.ApprovalWindow(w, start, env.Name))
			}
		}
		extra = approval.WindowKeys(inForce)
		wg.Go(func() { id, idErr = env.CallerIdentity(ctx) })
	}
	list, extras, err := leversview.OverridesWith(ctx, env, append(extra, freeze.Key))
	wg.Wait()
	if err != nil {
		return err
	}
	written, err := file.Written(ctx, leversview.Records(f, env), list)
	if err != nil {
		return err
	}
	// While the fleet is frozen no window opens (a window open lapses and
	// is cleared as always); a freeze that cannot be read writes nothing.
	// It was read with the overrides.
	fr, err := freeze.In(extras)
	if err != nil {
		return err
	}
	ds := levers.Compare(file, levers.State{Now: now, Overrides: list, Written: written, Freeze: fr})
	res := Result{Header: leversview.NewHeader("LeversApply", env, opts.File, file, now), DryRun: opts.DryRun, Round: round,
		Differences: leversview.Differences(ds, now), Results: []ItemResult{}, NotWritten: []levercmd.NotWritten{}}
	if changes(ds) == 0 {
		return printResult(f, opts, res)
	}
	if opts.DryRun {
		plan := file.Plan(ds, "")
		for _, d := range ds {
			if d.Action != levers.ActionNone {
				item := ItemResult{Dependency: d.Dependency, Action: "would-" + verb(d), Window: windowID(d), Before: overrideview.ViewPtr(d.Override, now)}
				for _, c := range plan {
					if c.Action == breaker.ActionForceOpen && d.Action == levers.ActionForce && c.Targets[0] == d.Dependency {
						item.impact = env.Levers().Impact(ctx, c)
						item.Impact = levercmd.ImpactJSON(item.impact)
					}
				}
				res.Results = append(res.Results, item)
			}
		}
		return printResult(f, opts, res)
	}
	ds, approvals, refused, err := authorize(ctx, env, file, ds, extras, func() (audit.Identity, error) { return id, idErr })
	if err != nil {
		return err
	}
	n := changes(ds)
	if n == 0 {
		res.heldBack = refused != nil
		if err := printResult(f, opts, res); err != nil {
			return err
		}
		return refused
	}
	if err := cmdenv.ConfirmProtected(ctx, f, env, opts.Yes, fmt.Sprintf("apply %s from %s", human.Count(int64(n), "change"), opts.File)); err != nil {
		return err
	}
	actor, err := env.Actor(ctx)
	if err != nil {
		return err
	}
	plan := file.Plan(ds, actor)
	for i := range plan {
		plan[i].Approval, plan[i].Chunked = approvals.of(plan[i]), opts.Chunked
	}
	// A stop signal waits for the write's outcome: never half a round.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	reps, werr := levers.Apply(wctx, env.Levers(), plan)
	ev := notify.Event{Action: "levers.apply", Reason: "levers " + file.Name, Actor: actor}
	var unwritten []levercmd.Unwritten
	var outs []lever.Outcome
	chunkOf := map[string]int{}
	for i, rep := range reps {
		outs = append(outs, rep.Outcomes...)
		if rep.Event != nil {
			ev.Levers = append(ev.Levers, rep.Event.Levers...)
		}
		for _, o := range rep.Outcomes {
			chunkOf[o.Target] = o.Chunk
			if !o.Written && o.Err != nil {
				unwritten = append(unwritten, levercmd.Unwritten{Name: o.Target, Err: o.Err})
			}
		}
		if c := levercmd.ChunksOf(rep); c != nil {
			if res.Chunks == nil {
				res.Chunks = &levercmd.Chunks{LeversPerTransaction: c.LeversPerTransaction}
			}
			res.Chunks.Transactions = max(res.Chunks.Transactions, c.Transactions)
			res.Chunks.Written += c.Written
			res.Chunks.NotWritten += c.NotWritten
		}
		for _, o := range rep.Written() {
			item := ItemResult{Dependency: o.Target, Action: "cleared", AuditID: o.Record.ID}
			if r, ok := o.Result.(breaker.ForceResult); ok {
				item.Action, item.Window = "forced", windowOf(ds, plan[i])
				if r.Replaced {
					item.Action = "replaced"
				}
				item.Override, item.Before = overrideview.ViewPtr(&r.After, now), overrideview.ViewPtr(r.Before, now)
			} else {
				item.Before = overrideview.ViewPtr(breaker.ClearResultOf(o).Before, now)
			}
			res.Results = append(res.Results, item)
		}
	}
	if werr != nil && len(res.Results) == 0 {
		return conflictHint(levercmd.TooLarge(werr))
	}
	res.NotWritten = levercmd.NotWrittenOf(unwritten, func(name string) int { return chunkOf[name] })
	// Past one transaction's size a round is several: what landed is
	// printed and announced, whatever became of the rest.
	table := opts.Output == cmdutil.FormatTable
	if bk == nil || werr != nil || table {
		if err := printResult(f, opts, res); err != nil {
			return err
		}
	}
	cmdenv.Notify(ctx, env, opts.NoNotify, ev)
	if werr != nil {
		return exitcode.Errorf(exitcode.PartialWrite, "partial write, each transaction whole: %d of %s of this round were written (listed above), the others not: %w; run apply again",
			len(res.Results), human.Count(int64(n), "change"), werr)
	}
	if bk != nil {
		// The round's clears are written and announced; now the fleet.
		res.Bake = &baking.View{}
		berr := bk.Run(ctx, env, outs, now, res.Bake, f.IOStreams.Out, table)
		if !table {
			if err := printResult(f, opts, res); err != nil {
				return err
			}
		}
		if berr != nil {
			return berr
		}
	}
	return refused
}

// changes is how many writes ds asks of apply.
func changes(ds []levers.Difference) int {
	n := 0
	for _, d := range ds {
		if d.Action != levers.ActionNone {
			n++
		}
	}
	return n
}

func verb(d levers.Difference) string {
	switch {
	case d.Action == levers.ActionClear:
		return "clear"
	case d.Kind == levers.KindChanged:
		return "replace" // the window's own override, written for other content
	}
	return "force"
}

// windowOf is the window of the difference c was planned from.
func windowOf(ds []levers.Difference, c lever.Change) string {
	for _, d := range ds {
		if d.Action == levers.ActionForce && d.Dependency == c.Targets[0] {
			return windowID(d)
		}
	}
	return ""
}

func windowID(d levers.Difference) string {
	if d.Window == nil {
		return ""
	}
	return d.Window.ID
}

func conflictHint(err error) error {
	if errors.Is(err, breaker.ErrConflict) {
		return fmt.Errorf("%w: an override changed since it was read; nothing of this round was written: run apply again", err)
	}
	return err
}

func printResult(f *cmdenv.Factory, opts *Options, res Result) error {
	out := f.IOStreams.Out
	switch {
	case opts.Watch && opts.Output == cmdutil.FormatJSON:
		return cmdutil.PrintJSONLine(out, res)
	case opts.Output != cmdutil.FormatTable:
		return cmdutil.PrintStructured(out, opts.Output, res)
	}
	prefix := ""
	if opts.Watch {
		prefix = res.At + " "
	}
	switch {
	case len(res.Results) == 0 && res.heldBack:
		fmt.Fprintf(out, "%sNothing applied: the table's policy holds back every change apply would make (why, below); "+
			"a window that needs approval is asked for with koshactl apply -f %s --request, then approved by another person with koshactl request approve ID\n",
			prefix, textsafe.Line(textsafe.ShellQuote(opts.File)))
	case len(res.Results) == 0:
		fmt.Fprintf(out, "%sNothing to apply: the overrides %s manages are as it plans.\n", prefix, textsafe.Line(res.Name))
	}
	for _, r := range res.Results {
		line := fmt.Sprintf("%s%s %s", prefix, r.Action, r.Dependency)
		if r.Override != nil && r.Override.ExpiresAt != nil {
			line += " until " + *r.Override.ExpiresAt
		}
		if r.AuditID != "" {
			line += " (audit " + r.AuditID + ")"
		}
		fmt.Fprintln(out, textsafe.Line(line))
		levercmd.Impact(out, r.impact)
	}
	levercmd.PrintChunks(out, res.Chunks, res.NotWritten, len(res.Results))
	for _, d := range res.Differences {
		if d.Action == levers.ActionNone {
			fmt.Fprintf(out, "%sleft alone: %s\n", prefix, textsafe.Line(d.Detail))
		}
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "context %s · store %s\n", textsafe.Line(res.Context), textsafe.Line(res.Store))
	return nil
}
