// Package approve implements `koshactl request approve`: approve a change
// request, applying exactly the change requested once it has its approvals.
package approve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/baking"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/depargs"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmd/request/requestview"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and argument.
type Options struct {
	ID       string
	SHA256   string
	Yes      bool
	NoNotify bool
	Output   string
	// Comment is what the approver says with the approval.
	Comment string
	// Bake watches the fleet after the approved clear this approval
	// applies, and puts an override back that did not hold.
	Bake       baking.Options
	MetricsURL string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve a change request; the last approval applies exactly the change requested",
		Long: heredoc.Doc(`
			Approve change request ID with your verified identity (STS: an unverified
			actor, such as a local or static-credentials context, cannot approve; exit 6).
			On a local context, a demo identity ($KOSHACTL_DEMO_USER=bob) counts as
			verified, to try four eyes: a demonstration, not a security boundary
			(docs/four-eyes-walkthrough.md).
			The requester cannot approve their own request (exit 7), and the table's policy
			must still permit the change, and permit you.

			You always confirm the hash of the change you approve: pass --sha256 with the
			hash you reviewed (koshactl request show ID), or, on a terminal, koshactl shows
			the change as it reads it and asks you to type its hash's first 12 hex digits.
			Without a terminal and without --sha256 the approval is refused (exit 2).

			Who asked and who approved are read from the request's proofs (items keyed by
			their writer's STS unique id, which no one else may write), never from the
			request item alone: a request whose item disagrees with its proofs, or that has
			no proof of asking (made before koshactl kept proofs: ask again), exits 14.

			A drill.run request (koshactl drill request) applies nothing: the approval that
			completes its approvals marks it approved, and the drill may then run with
			--request ID until the request expires.

			The approval that completes the approvals the policy asks for applies the change
			in one transaction: every lever write (conditional on the lever as it was when
			the change was requested), its audit record naming the requester and the
			approvers, and the request's status, applied. Two approvers at once apply it
			once; approving an applied request changes nothing (exit 0).

			A request that does not exist exits 3; one expired, denied or canceled exits
			13 (it can never be applied); one whose change does not match its hash, or not
			the --sha256 you reviewed, exits 14.

			--bake DURATION (a breaker.clear request only) watches the fleet after the clear
			this approval applies, as breaker clear --bake does (docs/bake.md): if the
			breaker re-opens on most instances, or an --alarm goes bad, the override is put
			back as it was and the command exits 15. The put-back is the table policy's
			breaker.rollback, asked by you, who applied the clear (own_rollback: the
			four-eyes policy permits it without approvals). An approval that does not apply
			the change (more approvals needed) bakes nothing. A bake that cannot work (no
			readable metrics source, longer than max-override, --alarm without CloudWatch,
			a request that is not a clear) is refused before anything is approved.
		`),
		Example: heredoc.Doc(`
			koshactl request show 3f2a9c1b0d4e
			koshactl request approve 3f2a9c1b0d4e --sha256 9b1c44e0d2aa
			koshactl request approve 3f2a9c1b0d4e --sha256 9b1c44e0d2aa --comment "checked the provider's status page"
			koshactl request approve 3f2a9c1b0d4e --sha256 9b1c44e0d2aa --bake 10m --alarm kosha-openai-errors
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := opts.Bake.Check(c, false); err != nil {
				return err
			}
			if c.Flags().Changed("metrics-url") && !c.Flags().Changed("bake") {
				return cmdutil.Usagef("--metrics-url only applies with --bake: add --bake DURATION, or drop --metrics-url")
			}
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.SHA256, "sha256", "", "the request's hash as you reviewed it (at least 12 hex digits): refuse a request that does not match; needed without a terminal")
	cmd.Flags().StringVar(&opts.Comment, "comment", "", "what you say with your approval (one line): kept in your approval's proof, shown by koshactl request show")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a protected context")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	baking.AddFlags(cmd, &opts.Bake)
	cmd.Flags().StringVar(&opts.MetricsURL, "metrics-url", "", "with --bake, scrape this Prometheus endpoint instead of the context's metrics source")
	return cmd
}

// Result is the JSON output.
type Result struct {
	cmdenv.Envelope
	Action  string           `json:"action"`
	Request requestview.View `json:"request"`
	// AuditIDs are the records this approval wrote.
	AuditIDs []string `json:"audit_ids"`
	// Remaining is how many more approvals the request needs.
	Remaining int `json:"remaining,omitempty"`
	// Bake is how the fleet held after the clear this approval applied,
	// with --bake only.
	Bake *baking.View `json:"bake,omitempty"`
}

// Run approves.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := audit.ValidateReason(opts.Comment); err != nil {
		return cmdutil.Usagef("--comment: %v", err)
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	ios := f.IOStreams
	if opts.SHA256 == "" && !ios.CanPrompt() {
		return cmdutil.Usagef("approving needs the hash of the change you reviewed: pass --sha256 HASH (its first 12 hex digits at least; koshactl request show %s shows it), or approve from a terminal to be shown the change and confirm it",
			textsafe.Line(opts.ID))
	}
	if err := cmdenv.ConfirmProtected(ctx, f, env, opts.Yes, "approve request "+opts.ID); err != nil {
		return err
	}
	var bk *baking.Baker
	if opts.Bake.Bake > 0 {
		if bk, err = newBaker(ctx, f, env, opts); err != nil {
			return err
		}
	}
	// The approver's identity is established while the request is read.
	a := approval.Approval{ID: opts.ID, SHA256: opts.SHA256, Comment: opts.Comment, Identify: func(ctx context.Context) (audit.Identity, error) {
		id, err := env.CallerIdentity(ctx)
		if err == nil && !id.Verified() {
			err = fmt.Errorf("%w: %s is not verified by STS (context %q: local, static credentials, or no STS at its endpoint); approve from a context whose credentials STS verifies%s",
				approval.ErrUnverified, textsafe.Line(id.Actor), env.Name, demoHint(env))
		}
		return id, err
	}}
	if opts.SHA256 == "" {
		a.Confirm = func(r approval.Request) (string, error) { return confirmHash(ctx, f, r) }
	}
	res, err := env.Approvals().Approve(ctx, env.Audit(), a)
	id, _ := env.CallerIdentity(ctx)
	if res.Expired {
		cmdenv.Notify(ctx, env, opts.NoNotify, approval.ExpiredEvent(res.Request, id.Actor))
	}
	if err != nil && !res.AlreadyApplied {
		return err
	}
	now := f.Clock.Now()
	out := Result{Envelope: env.Envelope("ChangeRequestApproval"), Request: requestview.Of(res.Request, now), AuditIDs: []string{},
		Remaining: res.Remaining}
	for _, r := range res.Records {
		out.AuditIDs = append(out.AuditIDs, r.ID)
	}
	switch {
	case res.AlreadyApplied:
		out.Action = "already-applied"
	case res.Applied:
		out.Action = "applied"
	case res.Authorized:
		out.Action = "authorized"
	default:
		out.Action = "approved"
	}
	defer cmdenv.PrintActedOn(ios.ErrOut, env, false)
	// With a bake the document is printed once the bake ended: it holds it.
	baked := bk != nil && out.Action == "applied"
	if opts.Output != cmdutil.FormatTable {
		if !baked {
			if err := cmdutil.PrintStructured(ios.Out, opts.Output, out); err != nil {
				return err
			}
		}
	} else {
		r := res.Request
		switch out.Action {
		case "already-applied":
			by := r.DecidedBy
			if errors.Is(err, approval.ErrChangedMeanwhile) {
				by = "another approver, just now"
			}
			what := "applied"
			if r.Status == approval.StatusApproved {
				what = "approved"
			}
			fmt.Fprintf(ios.Out, "Request %s was already %s (by %s): nothing changed\n", r.ID, what, textsafe.Line(by))
		case "applied":
			fmt.Fprintf(ios.Out, "Approved and applied request %s: %s\n", r.ID, textsafe.Line(r.Change.Summary()))
			fmt.Fprintf(ios.Out, "  requested by %s, approved by %s\n", textsafe.Line(r.Requester), textsafe.Line(strings.Join(r.Approvers, ", ")))
		case "authorized":
			fmt.Fprintf(ios.Out, "Approved request %s: %s\n", r.ID, textsafe.Line(r.Change.Summary()))
			fmt.Fprintf(ios.Out, "  nothing was applied: %s until %s\n", textsafe.Line(usedBy(r)),
				cmdutil.FormatTime(r.ExpiresAt, now, ios.IsStdoutTTY()))
		default:
			fmt.Fprintf(ios.Out, "Approved request %s: it needs %d more approval(s) from other people\n", r.ID, res.Remaining)
			if bk != nil {
				fmt.Fprintln(ios.Out, "  nothing was applied, so nothing is baked: the approval that applies it can bake")
			}
		}
	}
	if out.Action == "already-applied" {
		return nil
	}
	if ev, ok := approval.ApprovedEvent(res, id.Actor); ok {
		cmdenv.Notify(ctx, env, opts.NoNotify, ev)
	}
	if res.Applied {
		levercmd.Confirmed(ios.Out, slices.ContainsFunc(res.Report.Written(), func(o lever.Outcome) bool { return o.Confirmed }))
	}
	if !baked {
		return nil
	}
	// The clear is written and announced; now the fleet. A put-back is
	// asked by this approver, the clear's record's actor: own_rollback.
	table := opts.Output == cmdutil.FormatTable
	out.Bake = &baking.View{}
	// The fleet is judged from the moment the clear was applied (after
	// any prompt for the hash).
	berr := bk.Run(ctx, env, res.Report.Outcomes, res.Request.DecidedAt, out.Bake, ios.Out, table)
	if !table {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, out); err != nil {
			return err
		}
	}
	return berr
}

// newBaker makes --bake ready before anything is approved: the request
// must be a breaker.clear (nothing else is baked), and its sources must
// work (baking.New).
func newBaker(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, opts *Options) (*baking.Baker, error) {
	r, err := env.Approvals().Get(ctx, opts.ID)
	if err != nil {
		return nil, err
	}
	if r.Change.Action != breaker.ActionClear {
		return nil, cmdutil.Usagef("--bake watches the fleet after a clear, and request %s is a %s: drop --bake; nothing was approved",
			r.ID, textsafe.Line(r.Change.Action))
	}
	ov, err := depargs.Overrides(env)
	if err != nil {
		return nil, err
	}
	bk, err := baking.New(ctx, f, env, opts.Bake, opts.MetricsURL, ov.Durations().MaxFor())
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was approved", err)
	}
	return bk, nil
}

// confirmHash shows the approver the change of r as read, with its hash,
// and asks them to type the hash's first 12 hex digits: what they type is
// the hash the approval is checked against.
func confirmHash(ctx context.Context, f *cmdenv.Factory, r approval.Request) (string, error) {
	ios := f.IOStreams
	fmt.Fprintln(ios.ErrOut, "You are approving:")
	requestview.Print(ios.ErrOut, r, f.Clock.Now(), ios.IsStderrTTY())
	answer, err := f.Prompter.Input(ctx, "To approve exactly this change, type the first 12 hex digits of its SHA-256: ")
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("confirmation not given: %w", err)
		}
		return "", exitcode.Errorf(exitcode.Refused, "confirmation not given: %w", err)
	}
	answer = strings.ToLower(strings.TrimSpace(answer))
	if len(answer) < 12 || !strings.HasPrefix(r.SHA256, answer) {
		return "", exitcode.Errorf(exitcode.Refused, "confirmation %s is not the hash of request %s (%s...): nothing was approved", textsafe.Quote(answer), r.ID, r.SHA256[:12])
	}
	return answer, nil
}

// usedBy says who may now go on with approved request r (a drill.run or
// levers.window request, which applies nothing itself), and how.
func usedBy(r approval.Request) string {
	if w := r.Change.Window; r.Change.Action == approval.ActionLeversWindow && w != nil {
		return fmt.Sprintf("apply may now force window %s of levers %s (koshactl apply -f FILE, which finds request %s by itself)", w.ID, w.File, r.ID)
	}
	if d := r.Change.Drill; d != nil {
		return fmt.Sprintf("the drill may run with koshactl drill run %s --request %s", d.File, r.ID)
	}
	return "it may be used with --request " + r.ID
}

// demoHint is how to try an approval on a local context: as a demo
// identity.
func demoHint(env *cmdenv.Env) string {
	if !env.Context.IsLocal() {
		return ""
	}
	return fmt.Sprintf(", or, to try four eyes on this local context, approve as a demo identity: %s=bob koshactl request approve ... (docs/four-eyes-walkthrough.md)", identity.DemoEnv)
}
