package report

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/gameday"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// fetchTimeout bounds the read of the run's window from the metrics source.
const fetchTimeout = 30 * time.Second

// Options are the parsed flags and argument.
type Options struct {
	Journal string
	Output  string
	// Out is the file to write; empty means stdout.
	Out string
	// NoFetch keeps the report to what the journal holds.
	NoFetch bool
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "report JOURNAL",
		Short: "Render a drill's journal as a game-day report: one self-contained HTML file, or a Markdown summary",
		Long: heredoc.Doc(`
			Render the JSON journal of a drill run (drill run --journal) as a report for
			the people who review it. The HTML form is one file with no script, font or
			external resource, so it opens offline and can be attached to a CI run: the
			outcome, exit code, context, store, actor and audit ids at the top; what was
			pulled, what stopped it and when everything was put back; a timeline of the
			hypothesis checks, each step, each lever from its write to its rollback (or to
			its expiry when it was not put back), the stop conditions' evaluations and
			the one that fired, recoveries and the deadline; then the affected
			dependencies' breaker_state over the run. -o markdown writes a summary for a
			GitHub step summary or a pull-request comment.

			The breaker_state comes from the samples the run recorded. For a journal
			without them (written by an older koshactl, or a drill that polled no gauges)
			the run's window is read from the metrics source of the journal's context
			(--context selects another), when that source keeps history (CloudWatch does;
			a Prometheus scrape only knows the present). --no-fetch renders the journal
			alone.

			Every value in a journal came from a drill file, the store, an HTTP answer or
			an alarm, and is shown as text: HTML-escaped under a strict
			Content-Security-Policy, Markdown- and HTML-escaped in the summary.

			The report stays a few MiB whatever the journal holds: the journal is read
			as a stream, a value longer than 1000 bytes is folded (with how much more
			the journal holds), and each table shows its first 100 rows and says how
			many more there are (docs/contracts/drill-file.md).

			Exit codes: 0 the report was written; 2 the file is not a drill journal, or it
			is of a later version than this koshactl reads.
		`),
		Example: heredoc.Doc(`
			koshactl drill report out/drill.json --out out/drill.html
			koshactl drill report out/drill.json -o markdown >>"$GITHUB_STEP_SUMMARY"
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Journal = args[0]
			if opts.Output != gameday.FormatHTML && opts.Output != gameday.FormatMarkdown {
				return cmdutil.Usagef("-o %s: use html or markdown", opts.Output)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Output, "output", "o", gameday.FormatHTML, "report format: html|markdown")
	fl.StringVar(&opts.Out, "out", "", "write the report to this file (atomically) instead of stdout")
	fl.BoolVar(&opts.NoFetch, "no-fetch", false, "do not read the run's window from the metrics source when the journal holds no breaker_state samples")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{gameday.FormatHTML, gameday.FormatMarkdown}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("out")
	return cmd
}

// Run reads the journal and writes its report.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	ios := f.IOStreams
	j, err := gameday.ReadJournal(opts.Journal)
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("%w; nothing was written", err))
	}
	// A report may go to a pipe or device; a refused path fails before
	// any fetch.
	if opts.Out != "" {
		if err := fsutil.CheckOutput(opts.Out, true); err != nil {
			return cmdutil.Usagef("--out %s: %v; nothing was written", opts.Out, fsutil.Cause(err))
		}
	}
	in := gameday.Input{Journal: j}
	if len(j.GaugeSamples) == 0 && !opts.NoFetch && len(gameday.Dependencies(j)) > 0 {
		samples, from, ferr := fetch(ctx, f, j)
		in.Samples, in.SamplesFrom = samples, from
		if ferr != nil {
			in.FetchError = ferr.Error()
			fmt.Fprintf(ios.ErrOut, "warning: %s; the report shows no breaker_state\n", textsafe.OneLine(ferr.Error()))
		}
	}
	var buf bytes.Buffer
	if err := gameday.Render(&buf, opts.Output, in); err != nil {
		return err
	}
	if opts.Out == "" {
		_, err := ios.Out.Write(buf.Bytes())
		return err
	}
	if err := fsutil.WriteFile(ctx, opts.Out, buf.Bytes(), 0o644); err != nil {
		return cmdutil.Usagef("--out %s: %v; nothing was written", opts.Out, fsutil.Cause(err))
	}
	fmt.Fprintf(ios.ErrOut, "wrote %s\n", textsafe.Line(opts.Out))
	return nil
}

// fetch reads the run's window from the metrics source of the journal's
// context (or the one --context selects).
func fetch(ctx context.Context, f *cmdenv.Factory, j *drill.Journal) ([]drill.GaugeSample, string, error) {
	f.ContextName = cmp.Or(f.ContextName, j.Context)
	env, err := f.Env(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("context %q: %w", f.ContextName, err)
	}
	src, err := gaugeenv.Source(ctx, env, "")
	if err != nil {
		return nil, "", fmt.Errorf("the metrics source of context %q: %w", env.Name, err)
	}
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	samples, err := gameday.FetchSamples(fctx, src, j, f.Clock.Now())
	return samples, src.Describe(), err
}
