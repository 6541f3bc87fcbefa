package set

import (
	"context"
	"math"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/changeloop"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// Options are the parsed flags and argument.
type Options struct {
	Client string
	Tokens float64
	changeloop.ChangeOptions
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "set CLIENT --tokens N",
		Short: "Set a client's bucket to N tokens (0 to capacity)",
		Long: heredoc.Doc(`
			Write an exact token count into one client's bucket, from 0 to the context's
			capacity (fractions allowed). The bucket then refills from N at the usual
			rate. The write is conditional on the updated_at read and made with its
			audit record (ratelimit.set) in one transaction; setting the count the
			bucket already holds changes nothing.

			A client without a bucket (no request of it has reached the data plane) is
			refused (exit 3) with the nearest existing client, nothing written; --create
			writes its bucket anyway.
		`),
		Example: heredoc.Doc(`
			koshactl ratelimit set tenant-7:alice --tokens 5 --reason "slow the import job down"
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Client = args[0]
			if !c.Flags().Changed("tokens") {
				return cmdutil.Usagef("--tokens is required: give the token count to write, like --tokens 5")
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&opts.Tokens, "tokens", 0, "token count to write (0 to capacity)")
	changeloop.AddChangeFlags(cmd, &opts.ChangeOptions)
	changeloop.AddCreateFlag(cmd, &opts.ChangeOptions)
	return cmd
}

// Run sets the bucket.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	return changeloop.RunOne(ctx, f, ratelimit.Change{Op: ratelimit.OpSet, Client: opts.Client, Tokens: opts.Tokens}, func() error {
		if math.IsNaN(opts.Tokens) || math.IsInf(opts.Tokens, 0) {
			return cmdutil.Usagef("--tokens %v is not a number of tokens", opts.Tokens)
		}
		return nil
	}, opts.ChangeOptions)
}
