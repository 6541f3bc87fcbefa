// Package diff implements `koshactl diff -f FILE`: what a levers file plans
// (the windows in force now), what the table holds (the overrides) and what
// the fleet does (its breaker_state gauges), compared three ways.
package diff

import (
	"context"
	"errors"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"slices"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levers/leversview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/levers"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// FormatMarkdown is diff's extra output format: a pull request comment.
const FormatMarkdown = "markdown"

// Options are the parsed flags.
type Options struct {
	File       string
	Output     string
	MetricsURL string
	// NoGauges compares the file with the table alone.
	NoGauges bool
}

// Result is diff's document (docs/contracts/cli-output.md).
type Result struct {
	leversview.Header
	// InSync: no difference at all, of any kind.
	InSync bool `json:"in_sync"`
	// ApplyChanges counts the differences apply would change (force or
	// clear); the others (action none) are information. Exit 1 only when
	// it is not zero.
	ApplyChanges int                     `json:"apply_changes"`
	Gauges       Gauges                  `json:"gauges"`
	Differences  []leversview.Difference `json:"differences"`
	Windows      []leversview.Window     `json:"windows"`
}

// Gauges says where the fleet's side came from, and whether it was read.
type Gauges struct {
	Source string  `json:"source"`
	OK     bool    `json:"ok"`
	Error  *string `json:"error"`
}

// ErrDifferences is diff's answer when the file, the table and the fleet
// disagree: exit 1.
var ErrDifferences = errors.New("differences found")

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "diff -f FILE",
		Short: "Compare a levers file with the table's overrides and the fleet's gauges",
		Long: heredoc.Doc(`
			Compare three things and say what kind of difference each is: the levers file
			(the windows in force now, docs/contracts/levers-file.md), the table (the
			breaker overrides) and the fleet (its breaker_state gauges).

			  window_not_applied   a window is in force and its dependency has no override
			  window_changed       the override was written for the window as it was before an edit
			  window_ended         an override the file manages whose window ended or was removed
			  window_blocked       a window is in force, but an override the file does not manage holds it
			  unplanned_override   an override no window plans (an incident lever): shown, never touched
			  not_obeyed           an override in force that the fleet does not obey
			  lapsed_still_forced  no override in force, and the fleet still reports it forced

			The APPLY column says what koshactl apply would do: force, clear, or none.
			Reads: the overrides (the lists index, and the known dependencies by key) and
			the gauges, together: one round trip (no scan).

			Exit codes: 0 nothing for apply to change (differences it leaves alone, such as
			an incident's override, are printed as information); 1 apply would change
			something; 2 the file has problems (each with its line); 5 the store or the
			gauges could not be read (what could be compared is printed); 6 credentials
			refused.
		`),
		Example: heredoc.Doc(`
			koshactl diff -f levers/prod.yaml
			koshactl diff -f levers/prod.yaml -o markdown > comment.md   # for the pull request
			koshactl diff -f levers/prod.yaml -o json --jq '.differences[] | select(.action != "none")'
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.File, "file", "f", "", "the levers file")
	cmd.Flags().StringVar(&opts.MetricsURL, "metrics-url", "", "scrape this Prometheus endpoint instead of the context's metrics source")
	cmd.Flags().BoolVar(&opts.NoGauges, "no-gauges", false, "compare the file with the table only (no fleet side)")
	cmdutil.AddOutputFlag(cmd, &opts.Output, FormatMarkdown)
	return cmd
}

// Run compares and prints; its error carries the exit code.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	file, err := leversview.Load(env, opts.File)
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	// While the fleet is frozen apply opens no window: diff says so. The
	// freeze is read with the overrides, in the same round trip.
	st := levers.State{Now: now}
	res := Result{Header: leversview.NewHeader("LeversDiff", env, opts.File, file, now), Gauges: Gauges{Source: "none (--no-gauges)", OK: true}}
	var gaugeErr error
	if opts.NoGauges {
		var extras map[string]store.Item
		if st.Overrides, extras, err = leversview.OverridesWith(ctx, env, []string{freeze.Key}); err != nil {
			return err
		}
		if st.Freeze, err = freeze.In(extras); err != nil {
			return err
		}
	} else {
		src, err := gaugeenv.Source(ctx, env, opts.MetricsURL)
		if err != nil {
			return err
		}
		known := env.Context.KnownDependencies()
		ov, err := depargs.Overrides(env)
		if err != nil {
			return err
		}
		// The fleet's freeze rides the overrides' read, beside the gauges.
		col := (&metrics.Collector{Overrides: ov, Gauges: src, Clock: f.Clock, Known: known, Extra: []string{freeze.Key}}).Collect(ctx)
		if col.StoreErr != nil {
			return col.StoreErr
		}
		if st.Freeze, err = freeze.In(col.Extra); err != nil {
			return err
		}
		for _, s := range col.Statuses {
			if s.Override != nil {
				st.Overrides = append(st.Overrides, *s.Override)
			}
		}
		res.Gauges.Source = src.Describe()
		if gaugeErr = col.GaugeErr; gaugeErr == nil {
			st.Statuses = col.Statuses
		} else {
			res.Gauges.OK = false
			msg := gaugeErr.Error()
			res.Gauges.Error = &msg
		}
	}
	if st.Written, err = file.Written(ctx, leversview.Records(f, env), st.Overrides); err != nil {
		return err
	}
	ds := levers.Compare(file, st)
	res.InSync = len(ds) == 0 && gaugeErr == nil
	res.ApplyChanges = levers.Applicable(ds)
	res.Differences = leversview.Differences(ds, now)
	res.Windows = leversview.Windows(file, now)
	if err := printResult(f, opts, res); err != nil {
		return err
	}
	info := len(ds) - res.ApplyChanges
	switch {
	case gaugeErr != nil:
		return exitcode.Default(exitcode.Unavailable, fmt.Errorf("the fleet's side could not be compared: %w (pass --no-gauges to compare the file with the table only)", gaugeErr))
	case res.ApplyChanges > 0:
		also := ""
		if info > 0 {
			also = fmt.Sprintf(" (and %s it leaves alone)", human.Count(int64(info), "difference"))
		}
		return exitcode.Errorf(exitcode.Error, "%w: koshactl apply -f %s would make %s%s",
			ErrDifferences, textsafe.Quote(opts.File), human.Count(int64(res.ApplyChanges), "change"), also)
	case info > 0:
		fmt.Fprintf(f.IOStreams.ErrOut, "nothing for apply to change: %s it leaves alone (%s), shown as information\n",
			human.Count(int64(info), "difference"), strings.Join(kinds(ds), ", "))
	}
	return nil
}

// kinds are the kinds of ds, each once, in order.
func kinds(ds []levers.Difference) []string {
	var out []string
	for _, d := range ds {
		if !slices.Contains(out, d.Kind) {
			out = append(out, d.Kind)
		}
	}
	return out
}

func printResult(f *cmdenv.Factory, opts *Options, res Result) error {
	out := f.IOStreams.Out
	switch {
	case opts.Output == FormatMarkdown:
		return leversview.PrintMarkdown(out, res.Context, res.File, res.Differences, res.Windows)
	case opts.Output != cmdutil.FormatTable:
		return cmdutil.PrintStructured(out, opts.Output, res)
	}
	if !f.IOStreams.NoHeaders() {
		fmt.Fprintf(out, "levers %s (%s) · context %s · store %s · gauges %s\n", textsafe.Line(res.File), res.Name, textsafe.Line(res.Context),
			textsafe.Line(res.Store), textsafe.Line(res.Gauges.Source))
	}
	if res.Gauges.Error != nil {
		fmt.Fprintf(out, "! gauges unavailable, the fleet's side not compared: %s\n", textsafe.Line(*res.Gauges.Error))
	}
	return leversview.PrintTable(f.IOStreams, res.Differences, res.Windows)
}
