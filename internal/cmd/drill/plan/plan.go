package plan

import (
	"context"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
)

// Options are the parsed flags and argument.
type Options struct {
	File       string
	Vars       []string
	MetricsURL string
	Output     string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Show what a drill would do, without doing it: every step, lever, inverse and expiry",
		Long: heredoc.Doc(`
			Resolve the drill's variables (the environment and --var, as drill run would)
			and print which context and store it would act on, every step with the lever
			a mutating step moves, its rollback and the bound on how long the lever can
			outlive a killed run, what each force-open does to the tools while it holds
			(the degradation matrix: degraded, deferred or failed, and what a client
			sees), the hypothesis and stop conditions it would watch, and the
			DescribeAlarms request each poll would send for its alarm conditions.

			Nothing is run or written: no store item, no audit record, no request to the
			sandbox or CloudWatch. -o json prints the plan for CI review (its schema is in
			docs/contracts/drill-file.md).

			Exit codes: 0 the plan was printed; 2 the drill file is invalid, or the plan
			found a problem that would make the run invalid (listed as problem:).
		`),
		Example: heredoc.Doc(`
			koshactl drill plan docs/drills/openai-outage.yaml
			koshactl drill plan game-day.yaml --var region=eu-west-1 -o json
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Vars, "var", nil, "set one of the drill's vars, NAME=VALUE (repeatable)")
	fl.StringVar(&opts.MetricsURL, "metrics-url", "", "the Prometheus endpoint breaker gauges would be read from (as for drill run)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the plan.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	ios := f.IOStreams
	d, err := run.Parse(f, opts.File, opts.Vars, "")
	if err != nil {
		return err
	}
	env, err := run.Resolve(ctx, f, d, opts.MetricsURL)
	if err != nil {
		return err
	}
	deps, err := run.NewDeps(ctx, f, env, "")
	if err != nil {
		return err
	}
	p := runner.NewPlan(ctx, d, deps)
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, p); err != nil {
			return err
		}
	} else {
		runner.WritePlan(ios.Out, p)
	}
	if len(p.Problems) > 0 {
		return cmdutil.Usagef("%w: drill %s would not run: %s", cmdutil.ErrSilent, d.Name, p.Problems[0])
	}
	return nil
}
