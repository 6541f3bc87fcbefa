// Package dashboard implements `koshactl dashboard`: the on-call operator's
// live view of the fleet's breakers, with force-open and clear under the
// keys. The screen itself is internal/tui; this package wires it to the
// selected context (store, audit log, metrics source).
package dashboard

import (
	"context"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"sync"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levers/leversview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
	"github.com/kosha-platform/koshactl/internal/tui"
)

// Options are the parsed flags.
type Options struct {
	Interval   time.Duration
	MetricsURL string
	Wait       bool
	NoNotify   bool
	// Levers, when set, is a levers file whose windows the header shows.
	Levers string
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Live view of the fleet's breakers, with force-open and clear under the keys",
		Long: heredoc.Doc(`
			A full-screen view of every dependency's breaker: the state to believe (an active
			override means forced even while the gauges lag), the fleet's worst and best
			breaker_state gauge, instances reporting, the override's actor, reason and
			countdown, and the last hour as a strip.

			After f or c the dashboard waits for the fleet's gauges to confirm the change, as
			breaker force-open --wait does, and says in the status line whether it did (or
			which instances did not obey); the table marks an override the fleet does not
			obey past the source's bound "NOT OBEYED!", and the detail view shows the
			verdict (converging, confirmed, not obeyed). --wait=false turns the wait off.

			The detail view (enter) says what forcing the dependency does to the platform's
			tools, from the degradation matrix (docs/contracts/degradation-matrix.md): which
			tools degrade, defer or fail and what a client sees, with each tool's live call
			rate and the calls touched while the override holds (per hour when none does).
			The rates are those f and c record in the change's impact, from one shared read:
			the source the gauges read (--metrics-url, the context's metrics setting, or the
			sandbox on a local context naming none), read at most once a minute, and a
			change within 30s of a read takes its rates. On Prometheus a read takes two
			scrapes 5s apart, and the first starts when the dashboard opens, so the first f
			or c finds it under way or done.

			Keys: f force-open (asks for a reason and a duration), c clear, enter details
			(impact, timeline, per-instance breakdown, recent audit), p pending change requests (a
			approve, d deny there), / filter, r refresh, ? help, q quit. On a protected
			context, f, c, a and d ask you to type the context's name.

			On a table whose policy needs approvals for a force or a clear
			(docs/contracts/policy.md), f and c ask the policy as breaker force-open and
			clear do: the change becomes a change request, shown in the status line with its
			id and the command that approves it, and nothing is changed. An approver
			approves or denies it from the p pane (with their verified identity, as koshactl
			request approve). An override whose change carries no approval although the
			table had a policy is marked UNAPPROVED.

			Overrides come from the context's store, gauges from its metrics source
			(CloudWatch, or Prometheus; the local context scrapes the sandbox at
			http://127.0.0.1:8787/metrics). A failing source keeps its last data, marked stale.
			Worst and best are the fleet's statistics. On CloudWatch, which bills one metric
			per instance series, the per-instance breakdown is read only for the dependency
			in the detail view, at most once a minute, and marked partial when CloudWatch
			truncates it.
			The dashboard needs a terminal; scripts and CI use koshactl breaker status.
		`),
		Example: heredoc.Doc(`
			koshactl dashboard
			koshactl dashboard --context prod --interval 60s
			koshactl dashboard --metrics-url http://127.0.0.1:9100/metrics
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	opts.Interval = tui.DefaultInterval
	fl.Var(human.DurationFlag{D: &opts.Interval}, "interval", "how often both sources are read again (CloudWatch bills each read)")
	fl.StringVar(&opts.MetricsURL, "metrics-url", "", "scrape this Prometheus endpoint instead of the context's metrics source")
	fl.StringVar(&opts.Levers, "levers", "", "show the current and next windows of this levers file (docs/contracts/levers-file.md)")
	fl.BoolVar(&opts.Wait, "wait", true, "after a force or clear, wait for the gauges to confirm it and report the verdict")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	return cmd
}

// Run starts the dashboard and returns when the operator quits.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	ios := f.IOStreams
	if !ios.IsStdoutTTY() || !ios.IsStdinTTY() {
		return cmdutil.Usagef("the dashboard needs a terminal on stdin and stdout; for scripts and CI use `koshactl breaker status` (add --watch to follow, -o json for machines)")
	}
	if opts.Interval < time.Second {
		return cmdutil.Usagef("--interval %s is too short: use 1s or more (10s is the default)", human.Duration(opts.Interval))
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	src, err := gaugeenv.Source(ctx, env, opts.MetricsURL)
	if err != nil {
		return err
	}
	// The dashboard's changes tell their impact as the CLI's do (with
	// --metrics-url's rates, as breaker force-open's), and the detail shows
	// the rates of the same shared read.
	if err := gaugeenv.MeasureImpactAsGauges(env, opts.MetricsURL); err != nil {
		return err
	}
	rates, err := gaugeenv.LiveRates(ctx, env, opts.MetricsURL)
	if err != nil {
		return err
	}
	notice := ""
	// One breakdown: the detail view's dependency.
	if warning := src.CostWarning(len(env.Context.KnownDependencies()), 1, opts.Interval); warning != "" {
		notice = "cost: " + warning
		// Also on stderr: it stays visible after the full-screen view ends.
		fmt.Fprintf(ios.ErrOut, "warning: %s\n", warning)
	}
	log := env.Audit()
	// A failed notification's line waits until the full-screen view ends
	// (written now, it would tear the screen); it is in the audit log at once.
	var (
		warnMu sync.Mutex
		warns  []string
	)
	defer func() {
		warnMu.Lock()
		defer warnMu.Unlock()
		for _, w := range warns {
			fmt.Fprintln(ios.ErrOut, w)
		}
	}()
	var notifier notify.Notifier
	if !opts.NoNotify && env.Notifier != nil {
		notifier = env.Notifier.For(notify.SourceDashboard, func(line string) {
			warnMu.Lock()
			defer warnMu.Unlock()
			warns = append(warns, line)
		})
	}
	approvals := env.Approvals()
	ov, err := depargs.Overrides(env)
	if err != nil {
		return err
	}
	deps := tui.Deps{
		Overrides: tui.StoreOverrides{Overrides: ov, Levers: approvals.Guard(env.Levers().WithLog(log), env.CallerIdentity, notify.SourceDashboard),
			Known: env.Context.KnownDependencies(), Notifier: notifier},
		Gauges:   src,
		Rates:    rates,
		Audit:    log,
		Requests: tui.StoreRequests{Approvals: approvals, Log: log, Identity: env.CallerIdentity, Clock: f.Clock, Notifier: notifier},
	}
	var windows func(time.Time) []string
	if opts.Levers != "" {
		file, err := leversview.Load(env, opts.Levers)
		if err != nil {
			return err
		}
		windows = func(now time.Time) []string { return leversview.WindowLines(file, now) }
	}
	return tui.Run(ctx, deps, tui.Options{
		Windows:      windows,
		ContextName:  env.Name,
		Protected:    env.Context.Protected,
		StoreName:    env.Store.Describe(),
		Dependencies: env.Context.KnownDependencies(),
		Interval:     opts.Interval,
		MaxOverride:  env.Context.MaxOverrideDuration(),
		Clock:        f.Clock,
		Color:        ios.ColorEnabled(),
		Notice:       notice,
		GaugesHint:   src.Hint(),
		WaitFleet:    opts.Wait,
	}, ios.In, textsafe.Raw(ios.Out)) // the TUI draws the screen; its view renders every value with textsafe
}
