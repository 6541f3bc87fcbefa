package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lazyre"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// RepairOptions are the parsed arguments and flags of audit repair.
type RepairOptions struct {
	Subject string
	WriteID string
	Output  string
}

// RepairResult is the JSON output of audit repair.
type RepairResult struct {
	Kind    string `json:"kind"`
	Context string `json:"context"`
	Store   string `json:"store"`
	// Action is written (the record was missing and is now stored) or
	// already-recorded (it was there: nothing written).
	Action string       `json:"action"`
	Record audit.Record `json:"record"`
}

var writeIDRE = lazyre.New(`^[0-9a-f]{32}$`)

// NewCmdRepair builds `audit repair`.
func NewCmdRepair(f *cmdutil.Factory) *cobra.Command {
	opts := &RepairOptions{}
	cmd := &cobra.Command{
		Use:   "repair SUBJECT --write-id ID",
		Short: "Write the audit record of a change whose own record did not land (exit 8)",
		Long: heredoc.Doc(`
			Write the missing audit record of a change koshactl made but could not record
			(it exited 8 and printed this command). The store decides what is written, never
			the arguments: for a clear, the claim the clear wrote on the deleted item's
			write_id holds the record (actor, reason, time, the item deleted); for a
			force-open, the override still carrying that write_id is the change (actor,
			reason and created_at from it; the replaced item is gone, so the record names no
			before-image). The record carries repaired_by, who ran the repair.

			The record's key follows from the change, so it is written at most once: run
			twice, or after the change's own append landed after all, it writes nothing and
			says the record is already there. A write id that names no change the store can
			still prove (the override was replaced or cleared since) exits 3.

			For a rate-limit bucket change (reset, drain, set) interrupted after its write
			landed, the claim the change wrote on its own write_id holds the record (actor,
			reason, time, before and after); a bucket item holds none of these, so a bucket
			change without that claim cannot be repaired (exit 3).

			SUBJECT is an override's pk, breaker#<dependency>, or a bucket's, rl#<client>.
		`),
		Example: "  koshactl audit repair 'breaker#openai' --write-id 5f0c3a9e2b7d41c8a6e0f1d2c3b4a596",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Subject = args[0]
			if !writeIDRE.MatchString(opts.WriteID) {
				return cmdutil.Usagef("--write-id %s: give the 32 lowercase hex digits the failed command printed", textsafe.Quote(opts.WriteID))
			}
			if _, err := repairTarget(opts.Subject); err != nil {
				return cmdutil.Usagef("%v: audit repair writes the records of breaker overrides' and rate-limit buckets' changes, SUBJECT like breaker#openai or rl#alice", err)
			}
			return RunRepair(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.WriteID, "write-id", "", "the write id of the change whose record is missing (printed on exit 8)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// repairTarget says whose change subject names: a bucket's client (rl#) or
// an override's dependency (breaker#).
func repairTarget(subject string) (name string, err error) {
	if client, ok := strings.CutPrefix(subject, ratelimit.KeyPrefix); ok {
		return client, ratelimit.ValidateClientID(client)
	}
	return breaker.DependencyOfKey(subject)
}

// RunRepair writes the missing record.
func RunRepair(ctx context.Context, f *cmdutil.Factory, opts *RepairOptions) error {
	name, err := repairTarget(opts.Subject)
	if err != nil {
		return cmdutil.WithCode(exitcode.Usage, err)
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	actor, err := env.Actor(ctx)
	if err != nil {
		return err
	}
	var (
		rec     audit.Record
		written bool
	)
	if strings.HasPrefix(opts.Subject, ratelimit.KeyPrefix) {
		b, berr := env.Buckets()
		if berr != nil {
			return berr
		}
		rec, written, err = b.RepairAudit(ctx, env.Audit(), name, opts.WriteID, actor)
	} else {
		rec, written, err = env.Overrides().RepairAudit(ctx, env.Audit(), name, opts.WriteID, actor)
	}
	if err != nil {
		return err
	}
	out := RepairResult{Kind: "AuditRepairResult", Context: env.Name, Store: env.Store.Describe(), Action: "already-recorded", Record: rec}
	if written {
		out.Action = "written"
	}
	ios := f.IOStreams
	defer cmdutil.PrintActedOn(ios.ErrOut, env, false)
	if opts.Output != cmdutil.FormatTable {
		return cmdutil.PrintStructured(ios.Out, opts.Output, out)
	}
	what := fmt.Sprintf("%s of %s by %s at %s (audit record %s)", rec.Action, textsafe.Line(rec.Subject), textsafe.Line(rec.Actor),
		rec.Time.Format("2006-01-02T15:04:05.000Z07:00"), rec.ID)
	if written {
		fmt.Fprintf(ios.Out, "Wrote the missing audit record: %s\n", what)
	} else {
		fmt.Fprintf(ios.Out, "Already recorded, nothing written: %s\n", what)
	}
	return nil
}
