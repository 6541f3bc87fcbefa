package get

import (
	"context"
	"errors"
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/bucketview"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/clientargs"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// Options are the parsed flags and argument.
type Options struct {
	Client string
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "get CLIENT",
		Short: "Show a client's bucket: stored tokens, tokens now, whether its next request passes",
		Long: heredoc.Doc(`
			Show the rate-limit bucket of one client: the item as stored (tokens,
			updated_at, ttl) and what the data plane makes of it now, with exactly the
			contract's formula: tokens refilled to now, whether the next request would be
			admitted, and how long until the next token and until the bucket is full.

			A client with no item has a full bucket; that is not an error.
		`),
		Example: heredoc.Doc(`
			koshactl ratelimit get tenant-7:alice
			koshactl ratelimit get tenant-7:alice -o json
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Client = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the bucket.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	s, env, err := read(ctx, f, opts.Client)
	if err != nil {
		return err
	}
	ios := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, result(s))
	}
	now := s.At
	tty := ios.IsStdoutTTY()
	w := ios.Out
	fmt.Fprintf(w, "Client:        %s\n", s.Client)
	fmt.Fprintf(w, "Limits:        %s (%s)\n", s.Limits, env.LimitsSource())
	if s.Exists {
		fmt.Fprintf(w, "Stored:        %s tokens, updated %s (updated_at %d)\n", human.Number(s.Stored.Tokens),
			cmdutil.FormatTime(s.Stored.UpdatedAt(), now, tty), s.Stored.UpdatedAtMs)
	} else {
		fmt.Fprintf(w, "Stored:        no item (a missing item is a full bucket)\n")
	}
	fmt.Fprintf(w, "Tokens now:    %s of %s\n", human.Number(s.Tokens), human.Number(s.Limits.Capacity))
	if s.Admit {
		fmt.Fprintf(w, "Next request:  admitted\n")
	} else {
		fmt.Fprintf(w, "Next request:  refused (429), retry after %s\n", bucketview.WaitText(s.RetryAfter))
	}
	if s.Full() {
		fmt.Fprintf(w, "Next token:    - (full)\n")
		fmt.Fprintf(w, "Full:          now\n")
	} else {
		fmt.Fprintf(w, "Next token:    %s\n", bucketview.WaitFromNow(s.NextToken))
		fmt.Fprintf(w, "Full:          %s\n", bucketview.WaitFromNow(s.UntilFull))
	}
	if s.AheadOfClock > 0 {
		fmt.Fprintf(w, "Note:          updated_at is %s ahead of this clock; refill resumes when the clock gets there\n", bucketview.WaitText(s.AheadOfClock))
	}
	if exp := s.TTLExpiry(); !exp.IsZero() {
		fmt.Fprintf(w, "TTL expiry:    %s (then DynamoDB may delete the item; it reads as full by then)\n", cmdutil.FormatTime(exp, now, tty))
	} else if s.Exists {
		fmt.Fprintf(w, "TTL expiry:    none (no ttl attribute: the item is never collected)\n")
	}
	return nil
}

// Result is the JSON output: kind RateLimitBucket and the bucket's view.
type Result struct {
	Kind string `json:"kind"`
	bucketview.BucketView
}

func result(s ratelimit.Status) Result { return Result{"RateLimitBucket", bucketview.View(s)} }

// read reads client's bucket in the context.
func read(ctx context.Context, f *cmdenv.Factory, client string) (ratelimit.Status, *cmdenv.Env, error) {
	if err := clientargs.CheckClients([]string{client}); err != nil {
		return ratelimit.Status{}, nil, err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return ratelimit.Status{}, nil, err
	}
	b, err := clientargs.Buckets(env)
	if err != nil {
		return ratelimit.Status{}, nil, err
	}
	s, err := b.Get(ctx, client)
	if errors.Is(err, ratelimit.ErrMalformedBucket) {
		return s, nil, fmt.Errorf("%w (the data plane fails open on it: this client is not limited); replace it with koshactl ratelimit reset %s", err, client)
	}
	return s, env, err
}

// Read is the bucket as -o json prints it: the MCP server's ratelimit_get.
func Read(ctx context.Context, f *cmdenv.Factory, opts *Options) (Result, error) {
	s, _, err := read(ctx, f, opts.Client)
	if err != nil {
		return Result{}, err
	}
	return result(s), nil
}
