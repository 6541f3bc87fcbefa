package reset

import (
	"context"
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/changeloop"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/clientargs"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and arguments.
type Options struct {
	Clients      []string
	AllThrottled bool
	changeloop.ChangeOptions
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "reset CLIENT... | --all-throttled",
		Short: "Refill clients' buckets to capacity (their next requests pass)",
		Long: heredoc.Doc(`
			Refill each client's bucket to capacity, so it can send a full burst again.
			Reset FILLS the bucket; to empty one, use "koshactl ratelimit drain".

			Each write is conditional on the updated_at read, so a data-plane request
			landing in between is never overwritten unseen: the bucket is re-read and the
			reset retried. A bucket that is already full (or has no item) is left alone
			and reported, so reset is safe to repeat; a client without a bucket whose id is
			near an existing client's (agnet-1 beside agent-1) is refused (exit 3, naming
			the near client), nothing written. Every reset is written with its
			audit record (ratelimit.reset, subject rl#<client>) in one transaction.
		`),
		Example: heredoc.Doc(`
			koshactl ratelimit reset tenant-7:alice --reason "false positive, INC-311"
			koshactl ratelimit reset --all-throttled --dry-run
		`),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Clients = args
			if opts.AllThrottled == (len(args) > 0) {
				return cmdutil.Usagef("name the clients to reset, or pass --all-throttled (not both)")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.AllThrottled, "all-throttled", false, "reset every client whose next request would be refused now")
	changeloop.AddChangeFlags(cmd, &opts.ChangeOptions)
	return cmd
}

// Run resets the buckets.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := clientargs.CheckClients(opts.Clients); err != nil {
		return err
	}
	if err := audit.ValidateReason(opts.Reason); err != nil {
		return err
	}
	env, err := levercmd.Env(ctx, f, opts.Flags, opts.Reason)
	if err != nil {
		return err
	}
	clients := opts.Clients
	if opts.AllThrottled {
		b, err := clientargs.Buckets(env)
		if err != nil {
			return err
		}
		res, err := b.List(ctx, ratelimit.ListQuery{Throttled: true, Segments: clientargs.ScanSegments(env, 0)})
		if err != nil {
			return err
		}
		for _, m := range res.Malformed {
			fmt.Fprintf(f.IOStreams.ErrOut, "warning: skipped %s (not throttled: the data plane fails open on it; reset it by name to replace it)\n", textsafe.Line(m.Error()))
		}
		clients = nil
		for _, s := range res.Buckets {
			clients = append(clients, s.Client)
		}
		if len(clients) == 0 && opts.Output == cmdutil.FormatTable {
			fmt.Fprintf(f.IOStreams.Out, "No client is being limited in context %q: nothing to reset.\n", env.Name)
		}
	}
	changes := make([]ratelimit.Change, len(clients))
	for i, c := range clients {
		changes[i] = ratelimit.Change{Op: ratelimit.OpReset, Client: c}
	}
	return changeloop.RunChanges(ctx, f, env, changes, opts.ChangeOptions)
}
