// Package storeinit implements `koshactl store init`: create the context's
// DynamoDB table with its indexes, for development and drills.
package storeinit

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
)

// Options are the parsed flags.
type Options struct {
	Yes    bool
	DryRun bool
	Output string
}

// initializer is what init needs of a DynamoDB store.
type initializer interface {
	Init(ctx context.Context) (dynamo.InitReport, error)
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the context's DynamoDB table (pk string, on demand, its indexes) and enable TTL where supported",
		Long: "Create the control table on the context's DynamoDB endpoint with its global secondary indexes\n" +
			"(docs/contracts/store.md), wait until it is ACTIVE, and turn on time to live on the \"ttl\" attribute\n" +
			"where the endpoint supports it (some local ones do not: koshactl checks expiry on read either way).\n" +
			"Running it again on an existing table changes nothing; it names any index the table lacks, which\n" +
			"`koshactl store migrate` adds.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a protected context")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what would be created; change nothing")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// RunInit creates the table.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	in, ok := env.Store.(initializer)
	if !ok {
		fmt.Fprintf(f.IOStreams.Out, "Context %q uses the embedded store (%s): it is created on first use, nothing to do.\n",
			env.Name, env.Store.Describe())
		return nil
	}
	if opts.DryRun {
		fmt.Fprintf(f.IOStreams.Out, "Would create, unless it exists, %s (key pk: string, on-demand capacity, indexes %s) and enable time to live on %q\n",
			env.Store.Describe(), indexNames(), "ttl")
		cmdenv.PrintActedOn(f.IOStreams.ErrOut, env, true)
		return nil
	}
	if err := cmdenv.ConfirmProtected(ctx, f, env, opts.Yes, "create the table"); err != nil {
		return err
	}
	rep, err := in.Init(ctx)
	if err != nil {
		return err
	}
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(f.IOStreams.Out, opts.Output, map[string]any{
			"kind": "StoreInitResult", "context": env.Name, "table": rep.Table, "where": rep.Where,
			"created": rep.Created, "status": rep.Status, "ttl": string(rep.TTL), "missing_indexes": rep.MissingIndexes,
		})
	}
	for _, l := range rep.Lines() {
		fmt.Fprintln(f.IOStreams.Out, l)
	}
	cmdenv.PrintActedOn(f.IOStreams.ErrOut, env, false)
	return nil
}

func indexNames() string {
	names := make([]string, 0, len(store.Indexes))
	for _, ix := range store.Indexes {
		names = append(names, ix.Name)
	}
	return strings.Join(names, ", ")
}
