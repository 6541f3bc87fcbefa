package drain

import (
	"context"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/changeloop"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// Options are the parsed flags and argument.
type Options struct {
	Client string
	For    time.Duration
	changeloop.ChangeOptions
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "drain CLIENT",
		Short: "Empty a client's bucket so its requests get 429s (drills)",
		Long: heredoc.Doc(`
			Empty one client's bucket: tokens 0, so its next request is refused and
			requests pass again at the refill rate (one per second by default). Drain
			EMPTIES the bucket; to fill one, use "koshactl ratelimit reset".

			--for D keeps the client refused for D: the bucket is written with a
			negative token count (-D x rate) that the data plane's formula climbs back
			to zero after D, so requests pass again one refill interval later. No
			process has to stay running. D is at most 1h.

			The write is conditional on the updated_at read and made with its audit
			record (ratelimit.drain) in one transaction; a bucket already drained is
			left alone.

			A client gets its bucket with its first request. A client without one is
			more likely a typo than a client yet to be heard from: it is refused (exit 3)
			with the nearest existing client, nothing written. --create drains it anyway,
			so a client's first request is already refused.
		`),
		Example: heredoc.Doc(`
			koshactl ratelimit drain agent-1 --reason "429 drill"
			koshactl ratelimit drain agent-1 --for 5m --reason "429 drill, 5 minutes"
			koshactl ratelimit drain drill-client --create --reason "refuse its first request"
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Client = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.Var(human.DurationFlag{D: &opts.For}, "for", "keep the client refused this long (up to 1h), not just until its next token")
	changeloop.AddChangeFlags(cmd, &opts.ChangeOptions)
	changeloop.AddCreateFlag(cmd, &opts.ChangeOptions)
	return cmd
}

// Run drains the bucket.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	return changeloop.RunOne(ctx, f, ratelimit.Change{Op: ratelimit.OpDrain, Client: opts.Client, HoldFor: opts.For}, func() error {
		if ratelimit.CheckDrainHold(opts.For) != nil {
			return cmdutil.Usagef("--for %s: give a duration from 0 (just empty it) to %s", human.Duration(opts.For), human.Duration(ratelimit.MaxDrainHold))
		}
		return nil
	}, opts.ChangeOptions)
}
