// Package audit implements `koshactl audit list`: the audit records of the
// context's store, newest first.
package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// NewCmd returns the audit command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read the audit log of control-plane changes"}
	cmd.AddCommand(NewCmdList(f, nil))
	return cmd
}

// ListOptions are the parsed flags of audit list.
type ListOptions struct {
	Since   time.Duration
	Until   string
	Subject string
	Action  string
	Limit   int
	Output  string
}

// NewCmdList builds `audit list`; runF replaces the run function in tests.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List audit records, newest first (kept 90 days)",
		Example: "  koshactl audit list --since 2h --subject breaker#openai\n  koshactl audit list --subject 'rl#*' -o json\n" +
			"  koshactl audit list --since 26h --until 2026-11-29T18:00:00Z",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Since < 0 {
				return cmdutil.Usagef("--since %s is negative: give how far back to look, like 2h", opts.Since)
			}
			if opts.Limit < 0 {
				return cmdutil.Usagef("--limit %d is negative: give a count, or 0 for all", opts.Limit)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return RunList(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&opts.Since, "since", 0, "only records newer than this (e.g. 24h); default all retained")
	fl.StringVar(&opts.Until, "until", "", "only records older than this time (RFC3339, e.g. 2026-11-29T18:00:00Z)")
	fl.StringVar(&opts.Subject, "subject", "", "only records about this subject (breaker#openai; a trailing * matches a prefix)")
	fl.StringVar(&opts.Action, "action", "", "only records of this action (e.g. breaker.force-open)")
	fl.IntVar(&opts.Limit, "limit", 50, "show at most this many records (0 for all)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// ListResult is the JSON output of audit list.
type ListResult struct {
	Kind    string         `json:"kind"`
	Context string         `json:"context"`
	Store   string         `json:"store"`
	Items   []audit.Record `json:"items"`
}

// RunList lists the records.
func RunList(ctx context.Context, f *cmdutil.Factory, opts *ListOptions) error {
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	now := f.Clock.Now()
	q := audit.Query{Subject: opts.Subject, Action: opts.Action, Limit: opts.Limit}
	if opts.Since > 0 {
		q.Since = now.Add(-opts.Since)
	}
	if opts.Until != "" {
		t, err := time.Parse(time.RFC3339, opts.Until)
		if err != nil {
			return cmdutil.Usagef("--until %q is not an RFC3339 time: write it like 2026-11-29T18:00:00Z", opts.Until)
		}
		if !q.Since.IsZero() && !t.After(q.Since) {
			return cmdutil.Usagef("--until %s is not after --since (%s ago): nothing can match; widen the window", opts.Until, opts.Since)
		}
		q.Until = t
	}
	log := audit.NewLog(env.Store, f.Clock, env.Name)
	log.SetNotice(cmdutil.Notice(f.IOStreams.ErrOut))
	recs, err := log.List(ctx, q)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []audit.Record{}
	}
	io := f.IOStreams
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(io.Out, opts.Output, ListResult{Kind: "AuditRecordList", Context: env.Name,
			Store: env.Store.Describe(), Items: recs})
	}
	if len(recs) == 0 {
		fmt.Fprintln(io.Out, "No audit records match.")
		return nil
	}
	tty := io.IsStdoutTTY()
	tw := cmdutil.NewTable(io.Out)
	tw.Row("TIME", "ACTOR", "ACTION", "SUBJECT", "OUTCOME", "REASON")
	for _, r := range recs {
		actor := r.Actor
		if r.ActorSource == audit.ActorUnverified {
			actor += " (unverified)"
		}
		tw.Row(cmdutil.FormatTime(r.Time, now, tty), actor, r.Action, r.Subject, r.Outcome, r.Reason)
	}
	return tw.Flush()
}
