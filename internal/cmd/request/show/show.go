// Package show implements `koshactl request show`.
package show

import (
	"context"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmd/request/requestview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// Options are the parsed flags and argument.
type Options struct {
	ID         string
	Output     string
	MetricsURL string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one change request: the exact change, its hash, requester, approvals and expiry (exit 3 when there is none)",
		Long: heredoc.Doc(`
			Show one change request: the exact change, its hash, requester, approvals and
			expiry (exit 3 when there is none). A pending request that forces or clears
			dependencies also shows its impact, told now from the change its hash covers: the
			tools it degrades, defers or fails (the degradation matrix, LLD §8) and, with a
			metrics source (--metrics-url, or the context's metrics setting), their call
			rates and the calls touched while the override would hold.
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.MetricsURL, "metrics-url", "", "read the impact's call rates from this Prometheus endpoint instead of the context's metrics source")
	return cmd
}

// Run shows the request.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := gaugeenv.MeasureImpact(env, opts.MetricsURL); err != nil {
		return err
	}
	r, err := env.Approvals().Get(ctx, opts.ID)
	if err != nil {
		return err
	}
	now, ios := f.Clock.Now(), f.IOStreams
	r = requestview.Expire(ctx, env, ios.ErrOut, []approval.Request{r})[0]
	v := requestview.Of(r, now)
	im := env.Approvals().Impact(ctx, r)
	v.Impact = levercmd.ImpactJSON(im)
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, v); err != nil {
			return err
		}
	} else {
		requestview.Print(ios.Out, r, now, ios.IsStdoutTTY())
		levercmd.Impact(ios.Out, im)
	}
	return requestview.Tampered(ios.ErrOut, r.Verification)
}
