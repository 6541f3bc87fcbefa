// Package status implements `koshactl breaker status`: the dashboard's merged
// view (overrides from the store, breaker_state gauges from the context's
// metrics source) printed for scripts and CI, once or every interval.
package status

import (
	"context"
	"errors"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/overrideview"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultInterval is how often --watch refreshes.
const DefaultInterval = 10 * time.Second

// Options are the parsed flags and arguments.
type Options struct {
	Dependencies []string
	Watch        bool
	Interval     time.Duration
	Output       string
	MetricsURL   string
	Timeline     bool
	Check        bool
	AllowUnknown bool
	// Instances asks for every shown dependency's per-instance breakdown.
	Instances bool

	// After waits between --watch refreshes; nil means time.After (tests
	// replace it).
	After func(time.Duration) <-chan time.Time

	// hint is added to a gauges failure (how to start the default source).
	hint string
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "status [DEPENDENCY...]",
		Short: "Show every breaker: overrides from the store merged with the fleet's gauges",
		Long: heredoc.Doc(`
			Print what the dashboard shows, for scripts and CI: per dependency, the state to
			believe (an active override means forced even while gauges lag), the gauges' own
			state, the fleet's worst and best gauge, how many instances report, and the
			override with its actor, reason and expiry.

			Gauges come from the context's metrics source: CloudWatch (metrics.cloudwatch) or a
			Prometheus endpoint (metrics.prometheus; the local context defaults to the sandbox at
			http://127.0.0.1:8787/metrics). The JSON form is documented in
			docs/contracts/breaker-state-metric.md.

			Worst and best are always the fleet's statistics. The per-instance breakdown
			(instances reporting, per-state counts, the instances list) costs one CloudWatch
			metric per instance, so on CloudWatch it is read only with --instances, in requests
			of at most 500 metrics, and marked partial when CloudWatch truncates it; a
			Prometheus scrape always has it.

			Exit codes: 0 printed; 5 a source could not be read (what could be read is still
			printed); 6 credentials refused; with --check, 1 when a dependency is not closed.
			--watch prints again every --interval until interrupted (JSON: one line each).
		`),
		Example: heredoc.Doc(`
			koshactl breaker status
			koshactl breaker status openai -o json
			koshactl breaker status openai --instances   # per-instance breakdown from CloudWatch too
			koshactl breaker status --watch --interval 30s -o json | jq -c '.dependencies[] | {dependency, state}'
			koshactl breaker status --check   # in CI: fails unless every breaker is closed
		`),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dependencies = args
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "print again every --interval until interrupted")
	opts.Interval = DefaultInterval
	fl.Var(human.DurationFlag{D: &opts.Interval}, "interval", "refresh interval for --watch")
	fl.StringVar(&opts.MetricsURL, "metrics-url", "", "scrape this Prometheus endpoint instead of the context's metrics source")
	fl.BoolVar(&opts.Timeline, "timeline", false, "include the per-minute timeline in JSON and YAML output")
	fl.BoolVar(&opts.Check, "check", false, "exit 1 unless every dependency shown is closed")
	fl.BoolVar(&opts.AllowUnknown, "allow-unknown", false, "accept a dependency this context does not know")
	fl.BoolVar(&opts.Instances, "instances", false, "read the per-instance breakdown too (CloudWatch: one metric per instance series)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the status once, or every interval with --watch.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if opts.Watch && opts.Interval < time.Second {
		return cmdutil.Usagef("--interval %s is too short: use 1s or more (10s is the default)", human.Duration(opts.Interval))
	}
	c, err := prepare(ctx, f, opts)
	if err != nil {
		return err
	}
	if !opts.Watch {
		res := c.collect(ctx)
		if err := printResult(f, opts, res, false); err != nil {
			return err
		}
		return res.exitError(opts.Check)
	}
	after := opts.After
	if after == nil {
		after = time.After
	}
	for {
		res := c.collect(ctx)
		if ctx.Err() != nil {
			return nil // interrupted: watching ended normally
		}
		if err := printResult(f, opts, res, true); err != nil {
			return err
		}
		if e := res.exitError(false); e != nil {
			fmt.Fprintf(f.IOStreams.ErrOut, "warning: %v\n", e)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-after(opts.Interval):
		}
	}
}

// prepare checks the dependencies named and opens the gauge source: what
// every collection of one run reads from.
func prepare(ctx context.Context, f *cmdenv.Factory, opts *Options) (*collector, error) {
	env, err := f.Env(ctx)
	if err != nil {
		return nil, err
	}
	known := env.Context.KnownDependencies()
	if err := breaker.DependencyArgs(opts.Dependencies, known, opts.AllowUnknown); err != nil {
		return nil, err
	}
	src, err := gaugeenv.Source(ctx, env, opts.MetricsURL)
	if err != nil {
		return nil, err
	}
	ov, err := depargs.Overrides(env)
	if err != nil {
		return nil, err
	}
	ov.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	mc := &metrics.Collector{Overrides: ov, Gauges: src, Clock: f.Clock, Known: known,
		Only: opts.Dependencies, AllInstances: opts.Instances, Extra: []string{freeze.Key}}
	if w := src.CostWarning(len(known), mc.Breakdowns(), opts.Interval); w != "" && opts.Watch {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: %s\n", w)
	}
	opts.hint = src.Hint()
	return &collector{env: env.Name, storeName: env.Store.Describe(), describe: src.Describe(), opts: opts, c: mc}, nil
}

// Read collects the status once, as -o json prints it (docs/contracts/
// breaker-state-metric.md), with the error its exit code is of (nil, or
// the incomplete reads: what could be read is in the result). It costs the
// store and the gauge source the same requests as one `breaker status`:
// the MCP server's breaker_status is this.
func Read(ctx context.Context, f *cmdenv.Factory, opts *Options) (Result, error) {
	c, err := prepare(ctx, f, opts)
	if err != nil {
		return Result{}, err
	}
	res := c.collect(ctx)
	return res.Result, res.exitError(opts.Check)
}

// collector turns each collection into the printed result.
type collector struct {
	env, storeName, describe string
	c                        *metrics.Collector
	opts                     *Options
}

// result is one collection.
type result struct {
	Result
	storeErr, gaugeErr error
	statuses           []metrics.DependencyStatus
	hint               string
}

func (c *collector) collect(ctx context.Context) result {
	// The fleet's freeze, shown above the breakers, is read with the
	// overrides (the collector's extra key): no round trip of its own.
	col := c.c.Collect(ctx)
	var fr *freeze.Freeze
	if col.StoreErr == nil {
		var ferr error
		if fr, ferr = freeze.In(col.Extra); ferr != nil {
			col.StoreErr = ferr
		}
	}
	r := result{storeErr: col.StoreErr, gaugeErr: col.GaugeErr, statuses: col.Statuses, hint: c.opts.hint}
	r.Result = Result{Kind: "BreakerStatus", Context: c.env, GeneratedAt: *cmdutil.TimeOrNil(col.At),
		Store:  StoreView{Source: c.storeName, OK: col.StoreErr == nil, Error: errText(col.StoreErr)},
		Gauges: GaugesView{Source: c.describe, OK: col.GaugeErr == nil, Error: errText(col.GaugeErr), Warnings: []string{}},
	}
	if snap := col.Snapshot; snap != nil {
		r.Gauges.FetchedAt = cmdutil.TimeOrNil(snap.FetchedAt)
		r.Gauges.WindowStart = cmdutil.TimeOrNil(snap.Start)
		r.Gauges.WindowEnd = cmdutil.TimeOrNil(snap.End)
		r.Gauges.PeriodSeconds = int(snap.Period / time.Second)
		r.Gauges.Requests = snap.Requests
		r.Gauges.Metrics = snap.Metrics
		r.Gauges.Warnings = append(r.Gauges.Warnings, snap.Warnings...)
	}
	if fr != nil {
		v := fr.View(col.At)
		r.Freeze = &v
	}
	r.Dependencies = make([]DependencyView, 0, len(col.Statuses))
	for _, s := range col.Statuses {
		r.Dependencies = append(r.Dependencies, view(s, col.At, c.opts.Timeline))
	}
	return r
}

func errText(err error) *string {
	if err == nil {
		return nil
	}
	s := textsafe.OneLine(err.Error())
	return &s
}

// exitError maps the collection to the documented exit codes.
func (r result) exitError(check bool) error {
	errs := errors.Join(r.storeErr, r.gaugeErr)
	switch {
	case exitcode.KindOf(errs) == exitcode.Auth:
		return errs // denied: the errors say which credentials
	case errs != nil:
		var parts []string
		if r.storeErr != nil {
			parts = append(parts, "store: "+*errText(r.storeErr))
		}
		if r.gaugeErr != nil {
			parts = append(parts, "gauges: "+*errText(r.gaugeErr))
			if r.hint != "" {
				parts[len(parts)-1] += " (" + r.hint + ")"
			}
		}
		// Unavailable, unless what could not be read says otherwise.
		return exitcode.Default(exitcode.Unavailable, &incompleteError{msg: "status is incomplete: " + strings.Join(parts, "; "), err: errs})
	}
	if check {
		var bad []string
		for _, s := range r.statuses {
			if s.State != metrics.Closed {
				bad = append(bad, s.Dependency+" is "+s.State.Label())
			}
		}
		if len(bad) > 0 {
			return exitcode.Errorf(exitcode.Error, "check failed: %s", strings.Join(bad, ", "))
		}
	}
	return nil
}

func printResult(f *cmdenv.Factory, opts *Options, r result, watch bool) error {
	out := f.IOStreams.Out
	switch {
	case cmdutil.IsJSON(opts.Output):
		if watch && opts.Output == cmdutil.FormatJSON {
			// One document per line, so `| jq -c` and line readers follow along.
			return cmdutil.PrintJSONLine(out, r.Result)
		}
		return cmdutil.PrintStructured(out, opts.Output, r.Result)
	case opts.Output == cmdutil.FormatYAML:
		if watch {
			fmt.Fprintln(out, "---")
		}
		return cmdutil.PrintStructured(out, opts.Output, r.Result)
	}
	return printTable(f.IOStreams, r, watch, f.Clock.Now())
}

// printTable writes the human view; --no-headers drops its context line and
// the column headers, leaving warnings and rows.
func printTable(ios *iostreams.IOStreams, r result, watch bool, now time.Time) error {
	w, tty := ios.Out, ios.IsStdoutTTY()
	if watch {
		fmt.Fprintf(w, "\n")
	}
	fresh := "gauges " + r.Gauges.Source
	if r.Gauges.FetchedAt != nil {
		fresh += " at " + *r.Gauges.FetchedAt
	}
	if !ios.NoHeaders() {
		fmt.Fprintf(w, "context %s · store %s · %s\n", textsafe.Line(r.Context), textsafe.Line(r.Store.Source), textsafe.Line(fresh))
	}
	if r.Store.Error != nil {
		fmt.Fprintf(w, "! store unavailable, overrides unknown: %s\n", textsafe.Line(*r.Store.Error))
	}
	if r.Gauges.Error != nil {
		fmt.Fprintf(w, "! gauges unavailable, fleet state unknown: %s\n", textsafe.Line(*r.Gauges.Error))
	}
	for _, warn := range r.Gauges.Warnings {
		fmt.Fprintf(w, "! %s\n", textsafe.Line(warn))
	}
	if r.Freeze != nil && r.Freeze.State == freeze.StateFrozen {
		fmt.Fprintf(w, "FROZEN: %s\n", textsafe.Line(r.Freeze.Summary))
	}
	tw := cmdutil.NewTable(w)
	tw.Header(ios, "DEPENDENCY", "STATE", "GAUGES", "FLEET", "WORST", "BEST", "INSTANCES", "OVERRIDE")
	var notes []string
	for _, s := range r.statuses {
		worst, best, inst := "-", "-", "-"
		g := s.Gauges
		if g.HasData {
			worst, best = metrics.GaugeLabel(g.Max), metrics.GaugeLabel(g.Min)
		}
		switch {
		case g.Known > 0 && g.Breakdown == metrics.BreakdownPartial:
			inst = fmt.Sprintf("%d/%d of ~%d (partial)", g.Reporting, g.Known, g.Samples)
		case g.Known > 0:
			inst = fmt.Sprintf("%d/%d", g.Reporting, g.Known)
		case g.HasData:
			inst = fmt.Sprintf("~%d samples", g.Samples)
		}
		ov := "-"
		if o := s.Override; o != nil {
			switch {
			case s.OverrideActive:
				ov = fmt.Sprintf("%s, expires %s: %s", o.Actor, overrideview.Expiry(*o, now, tty), o.Reason)
			case o.State != breaker.OverrideStateForcedOpen:
				ov = "inactive"
			default:
				ov = "expired " + cmdutil.FormatTime(o.ExpiresAt, now, tty)
			}
			if o.Malformed() {
				ov = "malformed item, " + ov
			}
		}
		fleet := "-"
		if s.Fleet != nil {
			fleet = s.Fleet.Verdict.Label()
		}
		tw.Row(s.Dependency, s.State.Label(), s.GaugeState.Label(), fleet, worst, best, inst, ov)
		for _, n := range s.Notes {
			notes = append(notes, s.Dependency+": "+n)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", textsafe.Line(n))
	}
	return nil
}

// incompleteError is a status some of whose reads failed: its message names
// each, and it wraps their errors so their kinds decide the exit code.
type incompleteError struct {
	msg string
	err error
}

func (e *incompleteError) Error() string { return e.msg }
func (e *incompleteError) Unwrap() error { return e.err }
