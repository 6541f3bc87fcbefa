// Package migrate implements `koshactl store migrate`: add the indexes a
// table created by an older koshactl lacks, and index its existing records.
package migrate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags.
type Options struct {
	Yes          bool
	DryRun       bool
	MaxReadUnits float64
	Output       string
	SkipBackfill bool
}

// migrator is what migrate needs of a DynamoDB store.
type migrator interface {
	Migrate(ctx context.Context, dryRun bool) (dynamo.MigrateReport, error)
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Add the indexes a table created by an older koshactl lacks, and index its existing records",
		Long: "Bring an existing control table to the current schema (docs/contracts/store.md): add each missing\n" +
			"global secondary index with UpdateTable, one at a time, waiting until it is ACTIVE; then write the\n" +
			"index attributes onto audit records, overrides, change requests and reviews written before the\n" +
			"indexes existed (decided requests and acknowledged reviews before request list --all read the\n" +
			"index), so indexed reads find them. The backfill scans only the audit#, breaker#, request# and\n" +
			"review# items, paced to --max-read-units.\n" +
			"An index still being built is waited for. A table a CloudFormation stack manages (its\n" +
			"aws:cloudformation:stack-name tag) is left to the stack: migrate refuses to add its indexes\n" +
			"(exit 4) and says how to stage them through the stack (deploy/README.md).\n" +
			"On the embedded store the indexes are created when it is opened; migrate only backfills.\n" +
			"Running it again changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.MaxReadUnits <= 0 {
				return cmdutil.Usagef("--max-read-units %g is not positive: give a rate like 100", opts.MaxReadUnits)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a protected context")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "say what would be added and backfilled; change nothing")
	fl.BoolVar(&opts.SkipBackfill, "skip-backfill", false, "add the indexes only; leave existing records unindexed")
	fl.Float64Var(&opts.MaxReadUnits, "max-read-units", DefaultMaxReadUnits, "cap the backfill scan at this many read capacity units per second")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// DefaultMaxReadUnits is the default cap of a migrate backfill scan: small
// beside the data plane's reads, and a 100k-item table still backfills in
// minutes.
const DefaultMaxReadUnits = 100

// Result is the JSON output of store migrate.
type Result struct {
	Kind      string                 `json:"kind"`
	Context   string                 `json:"context"`
	DryRun    bool                   `json:"dry_run"`
	Added     []string               `json:"indexes_added"`
	Building  []string               `json:"indexes_building,omitempty"`
	Present   []string               `json:"indexes_present"`
	Audit     audit.BackfillReport   `json:"audit_backfill"`
	Overrides breaker.BackfillReport `json:"override_backfill"`
	// Requests is the backfill of change requests and reviews decided
	// before they stayed in the lists index (request list --all).
	Requests approval.BackfillReport `json:"request_backfill"`
}

// RunMigrate adds the missing indexes and backfills.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if !opts.DryRun {
		if err := cmdenv.ConfirmProtected(ctx, f, env, opts.Yes, "migrate the table"); err != nil {
			return err
		}
	}
	out := Result{Kind: "StoreResult", Context: env.Name, DryRun: opts.DryRun}
	var lines []string
	if m, ok := env.Store.(migrator); ok {
		rep, err := m.Migrate(ctx, opts.DryRun)
		out.Added, out.Present, out.Building = rep.Added, rep.Present, rep.Building
		lines = append(lines, rep.Lines()...)
		if err != nil {
			printLines(f, lines)
			return err
		}
	} else {
		for _, ix := range store.Indexes {
			out.Present = append(out.Present, ix.Name)
		}
		lines = append(lines, fmt.Sprintf("%s keeps its indexes itself (created when it is opened)", env.Store.Describe()))
	}
	if !opts.SkipBackfill {
		var stats store.ReadStats
		rate := &store.ScanRate{UnitsPerSecond: opts.MaxReadUnits}
		out.Audit, err = audit.NewLog(env.Store, f.Clock, env.Name).Backfill(ctx, opts.DryRun, rate, &stats)
		if err != nil {
			printLines(f, lines)
			return err
		}
		ov, err := depargs.Overrides(env)
		if err != nil {
			return err
		}
		out.Overrides, err = ov.Backfill(ctx, opts.DryRun)
		if err != nil {
			printLines(f, lines)
			return err
		}
		out.Requests, err = env.Approvals().Backfill(ctx, opts.DryRun, rate, &stats)
		if err != nil {
			printLines(f, lines)
			return err
		}
		verb := "indexed"
		if opts.DryRun {
			verb = "would index"
		}
		lines = append(lines,
			fmt.Sprintf("audit records: %d examined, %s %d", out.Audit.Examined, verb, out.Audit.Updated),
			fmt.Sprintf("overrides: %d examined, %s %d", out.Overrides.Examined, verb, out.Overrides.Updated),
			fmt.Sprintf("change requests and reviews: %d examined, %s %d", out.Requests.Examined, verb, out.Requests.Updated))
		for _, k := range []struct {
			what string
			left []store.Unindexed
		}{{"audit records", out.Audit.Unindexed}, {"overrides", out.Overrides.Unindexed}, {"change requests and reviews", out.Requests.Unindexed}} {
			if len(k.left) > 0 {
				lines = append(lines, fmt.Sprintf("%s: %d left out of an index DynamoDB would refuse them in "+
					"(indexed reads miss them there; --scan reads find them): %s", k.what, len(k.left), shortKeys(k.left)))
			}
		}
		if out.Requests.Skipped > 0 {
			lines = append(lines, fmt.Sprintf("change requests and reviews: %d without a creation time or write id left as they are", out.Requests.Skipped))
		}
		if out.Overrides.Skipped > 0 {
			lines = append(lines, fmt.Sprintf("overrides: %d without a version left as they are (see koshactl breaker list)", out.Overrides.Skipped))
		}
	}
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(f.IOStreams.Out, opts.Output, out); err != nil {
			return err
		}
	} else {
		printLines(f, lines)
	}
	cmdenv.PrintActedOn(f.IOStreams.ErrOut, env, opts.DryRun)
	return nil
}

func printLines(f *cmdenv.Factory, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(f.IOStreams.Out, l)
	}
}

// shortKeys names up to three items left out of an index, each pk cut to
// 40 bytes and shown safely, with why.
func shortKeys(left []store.Unindexed) string {
	var out []string
	for i, u := range left {
		if i == 3 {
			out = append(out, fmt.Sprintf("and %d more", len(left)-3))
			break
		}
		pk := u.PK
		if len(pk) > 40 {
			pk = strings.ToValidUTF8(pk[:40], "") + "…"
		}
		out = append(out, strconv.Quote(textsafe.Line(pk))+" ("+textsafe.Line(u.Why)+")")
	}
	return strings.Join(out, ", ")
}
