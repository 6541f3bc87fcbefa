// Package changeloop is what the mutating ratelimit verbs (reset, drain,
// set) share: their flags, the change each makes (the bucket lever's use
// case, moved through the context's guard: every bucket read before the
// first write, confirmation, the writes with their audit records) and the
// result they print.
package changeloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/bucketview"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/clientargs"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// ChangeOptions are the flags every mutating verb shares.
type ChangeOptions struct {
	Reason string
	levercmd.Flags
	// Create drains or sets a client that has no bucket yet (AddCreateFlag);
	// without it such a client is refused (exit 3) with the near client.
	Create bool
}

// AddCreateFlag registers --create on drain and set.
func AddCreateFlag(cmd *cobra.Command, o *ChangeOptions) {
	cmd.Flags().BoolVar(&o.Create, "create", false,
		"write the bucket of a client that has none yet (no request of it has reached the data plane)")
}

// AddChangeFlags registers the flags every mutating verb shares.
func AddChangeFlags(cmd *cobra.Command, o *ChangeOptions) {
	cmd.Flags().StringVarP(&o.Reason, "reason", "r", "", "why (recorded in the audit log)")
	levercmd.AddFlags(cmd, &o.Flags, "do not ask for confirmation on a protected context")
}

// Result is the JSON output of reset, drain and set.
type Result struct {
	cmdenv.Envelope
	DryRun  bool         `json:"dry_run"`
	Results []ItemResult `json:"results"`
	// Tally is the break-glass review, the clients whose bucket was not
	// written and why, and the chunks.
	levercmd.Tally
}

// ItemResult is what happened to one bucket.
type ItemResult struct {
	Client string `json:"client"`
	// Action is reset|drained|set when written, would-reset|would-drain|
	// would-set on a dry run, already-full|already-empty|unchanged when the
	// bucket already was what was asked (nothing written).
	Action  string                `json:"action"`
	Before  bucketview.BucketView `json:"before"`
	After   bucketview.BucketView `json:"after"`
	AuditID string                `json:"audit_id,omitempty"`
	// Malformed describes the invalid item the change replaced, if any.
	Malformed string `json:"malformed,omitempty"`
	// ConfirmedByReread is true when the store's answer was lost and the
	// change was settled as landed (re-issued under its token, or found by
	// a re-read of the bucket carrying it).
	ConfirmedByReread bool `json:"confirmed_by_reread,omitempty"`
	// Chunk is the transaction that wrote it, of a change written in
	// chunks.
	Chunk int `json:"chunk,omitempty"`

	res ratelimit.ChangeResult
}

// Verb names per op: done, dry run, no-op.
var verbs = map[ratelimit.Op][3]string{
	ratelimit.OpReset: {"reset", "would-reset", "already-full"},
	ratelimit.OpDrain: {"drained", "would-drain", "already-empty"},
	ratelimit.OpSet:   {"set", "would-set", "unchanged"},
}

var kinds = map[ratelimit.Op]string{
	ratelimit.OpReset: "RateLimitResetResult", ratelimit.OpDrain: "RateLimitDrainResult", ratelimit.OpSet: "RateLimitSetResult",
}

func action(r ratelimit.ChangeResult, dry bool) string {
	v := verbs[r.Change.Op]
	switch {
	case !r.Changed:
		return v[2]
	case dry:
		return v[1]
	}
	return v[0]
}

// RunOne makes one change of one client's bucket (drain, set): the client
// id is checked first, then the verb's own flag (check, which returns a
// usage error), then the context is resolved and the change made by
// [RunChanges].
func RunOne(ctx context.Context, f *cmdenv.Factory, c ratelimit.Change, check func() error, opts ChangeOptions) error {
	if err := clientargs.CheckClients([]string{c.Client}); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	env, err := levercmd.Env(ctx, f, opts.Flags, opts.Reason)
	if err != nil {
		return err
	}
	return RunChanges(ctx, f, env, []ratelimit.Change{c}, opts)
}

// RunChanges applies changes (one op, distinct clients) on the context: it
// checks every change, reads every bucket (a dry run of each) and asks the
// table's policy before the first write, asks for confirmation on a
// protected context, then writes each with its audit record. Buckets
// already in the requested state are reported and not written. The output
// lists what was done even when a later change fails.
func RunChanges(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, changes []ratelimit.Change, opts ChangeOptions) error {
	reason := strings.TrimSpace(opts.Reason)
	if err := audit.ValidateReason(opts.Reason); err != nil {
		return err
	}
	b, err := clientargs.Buckets(env)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if err := c.Validate(b.Limits()); err != nil {
			return cmdutil.UsageError(err)
		}
	}
	op, p := ratelimit.OpReset, ratelimit.Params{}
	clients := make([]string, len(changes))
	for i, c := range changes {
		op, p, clients[i] = c.Op, ratelimit.Params{Tokens: c.Tokens, HoldFor: c.HoldFor}, c.Client
	}
	lc := b.Change(op, reason, p, clients...)
	lc.MustExist = !opts.Create
	rep, err := levercmd.Change(ctx, f, env, lc, opts.Flags)
	var none *ratelimit.NoBucketError
	if errors.As(err, &none) {
		if none.Op == ratelimit.OpReset {
			// Refused only for a near client: reset has no --create (a
			// missing bucket is full already).
			return fmt.Errorf("%w: nothing %s; check the id with koshactl ratelimit list", err, verbs[none.Op][0])
		}
		return fmt.Errorf("%w: nothing %s; a client gets its bucket with its first request: check the id with koshactl ratelimit list, "+
			"or pass --create to %s the bucket of a client that has made no request yet", err, verbs[none.Op][0], none.Op)
	}
	if rep.Outcomes == nil || rep.Pending != nil {
		return levercmd.Refused(ctx, f, env, rep, err, opts.Flags)
	}
	out := Result{Envelope: env.Envelope(kinds[op]), DryRun: opts.DryRun, Results: []ItemResult{}}
	var failure, unknownErr error
	var unknown []string
	var unwritten []levercmd.Unwritten
	for _, o := range rep.Outcomes {
		if o.Err != nil {
			unwritten = append(unwritten, levercmd.Unwritten{Name: o.Target, Err: o.Err})
		}
		switch {
		case o.Unknown():
			unknown = append(unknown, o.Target)
			if unknownErr == nil {
				unknownErr = o.Err
			}
		case o.Err != nil:
			if failure == nil {
				failure = o.Err
			}
		default:
			it := item(ratelimit.ResultOf(o), opts.DryRun, o.Record.ID, o.Confirmed)
			it.Chunk = o.Chunk
			out.Results = append(out.Results, it)
		}
	}
	out.Tally = levercmd.TallyOf(rep, unwritten)
	err = levercmd.Print(f, env, opts.Flags, out, table(out, f.Clock.Now(), f.IOStreams.IsStdoutTTY()))
	cmdenv.Announce(ctx, env, rep.Event) // what was written, once printed (or not)
	if err != nil {
		return err
	}
	if unknownErr != nil {
		// The one state koshactl cannot tell: each bucket changed with its
		// record, or neither did. The error wraps store.ErrOutcomeUnknown
		// (exit 8) and says how to find out.
		check := "check it with koshactl ratelimit get " + unknown[0]
		if len(unknown) > 1 {
			check = "check each with koshactl ratelimit get CLIENT"
		}
		head := fmt.Sprintf("the outcome of %s %s is unknown: %s", op, strings.Join(unknown, ", "), check)
		if failure != nil {
			return fmt.Errorf("%s (%w); also %v", head, unknownErr, failure)
		}
		return fmt.Errorf("%s (%w)", head, unknownErr)
	}
	if failure != nil && len(rep.Written()) > 0 {
		failure = exitcode.Errorf(exitcode.PartialWrite, "partial write, each transaction whole: %w (the buckets listed as changed were; the rest were not)", failure)
	}
	return failure
}

func item(r ratelimit.ChangeResult, dry bool, auditID string, confirmed bool) ItemResult {
	it := ItemResult{Client: r.Change.Client, Action: action(r, dry), Before: bucketview.View(r.Before), After: bucketview.View(r.After), AuditID: auditID,
		ConfirmedByReread: confirmed, res: r}
	if r.Malformed != nil {
		it.Malformed = r.Malformed.Error()
	}
	return it
}

// table is out's lines for the human output.
func table(out Result, now time.Time, tty bool) string {
	var w strings.Builder
	for _, r := range out.Results {
		fmt.Fprintln(&w, textsafe.Line(describe(r, now, tty)))
		levercmd.Confirmed(&w, r.ConfirmedByReread)
	}
	out.PrintUnder(&w, len(out.Results))
	return w.String()
}

// describe is one human line about one change.
func describe(r ItemResult, now time.Time, tty bool) string {
	res := r.res
	before, after := human.Number(res.Before.Tokens), human.Number(res.After.Tokens)
	switch r.Action {
	case "already-full":
		note := ""
		if !res.Before.Exists {
			note = ", no item"
		}
		return fmt.Sprintf("%s is already full (%s tokens%s): nothing to reset", r.Client, before, note)
	case "already-empty":
		return fmt.Sprintf("%s is already drained (%s tokens): nothing to change", r.Client, before)
	case "unchanged":
		return fmt.Sprintf("%s already holds %s tokens: nothing to change", r.Client, before)
	}
	verb := map[string]string{"reset": "Reset", "would-reset": "Would reset", "drained": "Drained", "would-drain": "Would drain",
		"set": "Set", "would-set": "Would set"}[r.Action]
	if res.Malformed != nil {
		before = "malformed item"
	}
	line := fmt.Sprintf("%s %s: %s → %s tokens", verb, r.Client, before, after)
	if res.After.Admit {
		return line + " (next request admitted)"
	}
	line = fmt.Sprintf("%s: requests refused for %s", line, bucketview.WaitText(res.After.RetryAfter))
	if !tty {
		line += " (until " + cmdutil.FormatTime(now.Add(res.After.RetryAfter), now, false) + ")"
	}
	return line
}
