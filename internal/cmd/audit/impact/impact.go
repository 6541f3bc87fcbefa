// Package impact implements `koshactl audit impact`: which tools forced
// overrides degraded, when, and how many calls that touched.
package impact

import (
	"context"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/listing"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Options are the parsed flags.
type Options struct {
	Since    time.Duration
	Until    string
	Lookback time.Duration
	Scan     bool
	Output   string
}

// DefaultImpactLookback is how far before --since audit impact reads the
// records of overrides that may still hold at its start.
const DefaultImpactLookback = 24 * time.Hour

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "impact",
		Short: "Which tools forced overrides degraded, when, and how many calls that touched",
		Long: heredoc.Doc(`
			Read the audit records of breaker overrides in a time range and say, per forced
			dependency and tool, when the tool was degraded, deferred or failed (the
			degradation matrix, LLD §8), how the override ended (cleared, expired, replaced by
			another force, or still holding), and how many calls that touched: the tool's call
			rate recorded with the force (averaged with the clear's when both read one) times
			the span. A force recorded without a rate (no metrics source was read) shows its
			tools without a count.

			An override forced before --since is seen when its force falls within --lookback
			before it (default 24h). An override no instance obeys (postgres: no breaker)
			changes no tool and shows none.

			Exit codes: 0 listed; 2 a flag is wrong; 10 listed, but some records could not be
			read in full.
		`),
		Example: heredoc.Doc(`
			koshactl audit impact --since 24h
			koshactl audit impact --since 7d --until 2026-11-30T12:00:00Z -o json
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Since <= 0 {
				return cmdutil.Usagef("--since %s: give how far back to look, like 24h", human.Duration(opts.Since))
			}
			if opts.Lookback < 0 {
				return cmdutil.Usagef("--lookback %s is negative: give a duration like 24h, or 0", human.Duration(opts.Lookback))
			}
			if _, err := listing.ParseUntil(opts.Until, time.Time{}); err != nil {
				return err
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	opts.Since = 24 * time.Hour
	fl.Var(human.DurationFlag{D: &opts.Since}, "since", "the range starts this long ago (e.g. 2h, 24h, 7d)")
	fl.StringVar(&opts.Until, "until", "", "the range ends at this time: RFC3339 (2026-11-30T12:00:00Z) or a duration ago (1h, 2d); default now")
	opts.Lookback = DefaultImpactLookback
	fl.Var(human.DurationFlag{D: &opts.Lookback}, "lookback", "also read the forces this long before --since, whose overrides may still hold at its start")
	fl.BoolVar(&opts.Scan, "scan", false, "scan the whole table instead of the indexes (costs the table's size)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Result is the JSON output of audit impact.
type Result struct {
	cmdenv.Envelope
	Since time.Time     `json:"since"`
	Until time.Time     `json:"until"`
	Spans []impact.Span `json:"spans"`
	// Unreadable lists every attribute of a record read that could not be
	// read (docs/contracts/cli-output.md).
	Unreadable []store.Problem `json:"unreadable"`
}

// RunImpact reads the overrides' records of the range and prints their
// spans.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	since := now.Add(-opts.Since)
	until, err := listing.ParseUntil(opts.Until, now)
	if err != nil {
		return err
	}
	if until.IsZero() || until.After(now) {
		until = now
	}
	if !until.After(since) {
		return cmdutil.Usagef("--until %s is before --since %s: the range is empty", opts.Until, human.Duration(opts.Since))
	}
	log := audit.NewLog(env.Store, f.Clock, env.Name)
	log.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	l, err := log.List(ctx, audit.Query{Subject: breaker.OverridePrefix + "*", Since: since.Add(-opts.Lookback), Until: until, Scan: opts.Scan})
	if err != nil {
		return err
	}
	out := Result{Envelope: env.Envelope("AuditImpact"), Since: since.UTC(), Until: until.UTC(), Spans: append([]impact.Span{}, impact.History(l.Records, since, until)...),
		Unreadable: listing.Problems(l.Unreadable)}
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, out); err != nil {
			return err
		}
	} else if err := table(f, out, now); err != nil {
		return err
	}
	return listing.Unreadable(ios, opts.Output, l.Unreadable, "audit record", listing.AuditRecordFix)
}

// impactTable prints the spans, one row each (every value through the
// table's escaping).
func table(f *cmdenv.Factory, out Result, now time.Time) error {
	ios := f.IOStreams
	if len(out.Spans) == 0 {
		_, err := ios.Out.Write([]byte("No tool was changed by a forced override in the range.\n"))
		return err
	}
	tty := ios.IsStdoutTTY()
	t := cmdutil.NewTable(ios.Out)
	t.Row("DEPENDENCY", "TOOL", "BEHAVIOUR", "FROM", "TO", "FOR", "ENDED", "CALLS/MIN", "CALLS", "FORCED BY")
	for _, s := range out.Spans {
		rate, calls := "-", "-"
		if s.CallsPerMinute != nil {
			rate = impact.PerMinute(*s.CallsPerMinute)
		}
		if s.Calls != nil {
			calls = "about " + human.Count(*s.Calls, "call")
		}
		t.Row(s.Dependency, s.Tool, string(s.Behaviour), cmdutil.FormatTime(s.From, now, tty), cmdutil.FormatTime(s.To, now, tty),
			human.Duration(s.To.Sub(s.From).Round(time.Second)), s.Ended, rate, calls, s.ForcedBy)
	}
	return t.Flush()
}
