// Package levergate is how a lever command asks the table's policy
// (internal/policy) before it changes anything, and what it does when the
// policy asks for approvals: the change becomes a change request
// (internal/approval), printed with the command that approves it, and the
// command exits 12 (pending approval). With no policy stored, nothing is
// asked and nothing changes.
package levergate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Flags are the lever commands' policy flags.
type Flags struct {
	BreakGlass bool
	RequestTTL time.Duration
}

// AddFlags registers --break-glass and --request-ttl.
func AddFlags(cmd *cobra.Command, fl *Flags) {
	cmd.Flags().BoolVar(&fl.BreakGlass, "break-glass", false,
		"act at once where the table's policy allows a break-glass (needs --reason; recorded, announced and left for review)")
	cmd.Flags().DurationVar(&fl.RequestTTL, "request-ttl", approval.DefaultTTL,
		fmt.Sprintf("when the policy needs approvals: how long the change request waits for them (%s to %s)", approval.MinTTL, approval.MaxTTL))
}

// Check refuses flag values outside their bounds, before anything is read.
func (fl Flags) Check() error {
	if err := approval.CheckTTL(fl.RequestTTL); err != nil {
		return cmdutil.Usagef("--request-ttl: %v", err)
	}
	return nil
}

// Question is what a lever command asks of the policy.
type Question struct {
	Action   string
	Targets  []string
	Duration time.Duration
	NoExpiry bool
	Reason   string
	Flags
}

// ErrNeedsApproval stops a lever change the policy needs approvals for:
// nothing is written; the command submits a request instead ([Submit]).
var ErrNeedsApproval = approval.ErrNeedsApproval

// Gate is the policy's answer to a command: the domain's gate
// (approval.Gate, the rule the dashboard follows too), decided from the
// policy item read in the same batch read as the levers.
type Gate struct {
	*approval.Gate
	q Question
}

// New is the gate of one lever command.
func New(ctx context.Context, env *cmdenv.Env, q Question) *Gate {
	return &Gate{Gate: env.Approvals().NewGate(ctx, env.CallerIdentity, approval.Question{Action: q.Action, Targets: q.Targets,
		Duration: q.Duration, NoExpiry: q.NoExpiry, Reason: q.Reason, BreakGlass: q.BreakGlass}), q: q}
}

// Q is the question the gate answers.
func (g *Gate) Q() Question { return g.q }

// Breaker is the gate as the breaker lever operations take it: a denial
// is an error (exit 7), a change that needs approvals [ErrNeedsApproval],
// a break-glass on a table without a policy a usage error.
func (g *Gate) Breaker() *breaker.Gate {
	bg := g.Gate.Breaker()
	decide := bg.Decide
	bg.Decide = func(items map[string]store.Item, befores map[string]*breaker.Override) (*breaker.Attach, error) {
		at, err := decide(items, befores)
		if errors.Is(err, approval.ErrNothingToBreak) {
			return nil, cmdutil.Usagef("%v", err)
		}
		return at, err
	}
	return bg
}

// Buckets is the gate as the bucket levers take it, with the same usage
// error as [Gate.Breaker] for a break-glass on a table without a policy.
func (g *Gate) Buckets() *ratelimit.Gate {
	bg := g.Gate.Buckets()
	decide := bg.Decide
	bg.Decide = func(items map[string]store.Item, plans []ratelimit.ChangeResult) (*ratelimit.Attach, error) {
		at, err := decide(items, plans)
		if errors.Is(err, approval.ErrNothingToBreak) {
			return nil, cmdutil.Usagef("%v", err)
		}
		return at, err
	}
	return bg
}

// PrintBreakGlass writes the review line under a break-glass change's
// result (table output).
func (g *Gate) PrintBreakGlass(w io.Writer) {
	if g == nil || g.Review == nil {
		return
	}
	fmt.Fprintf(w, "BREAK-GLASS: recorded and announced; review %s stays open until someone else runs: koshactl request ack %s\n", g.Review.ID, g.Review.ID)
}

// Result is the JSON output of a lever command that became a change
// request.
type Result struct {
	Kind            string    `json:"kind"`
	Context         string    `json:"context"`
	Store           string    `json:"store"`
	RequestID       string    `json:"request_id"`
	Status          string    `json:"status"`
	Change          string    `json:"change"`
	SHA256          string    `json:"sha256"`
	Requester       string    `json:"requester"`
	ApprovalsNeeded int       `json:"approvals_needed"`
	Policies        []string  `json:"policies"`
	ExpiresAt       time.Time `json:"expires_at"`
	ApproveCommand  string    `json:"approve_command"`
	AuditID         string    `json:"audit_id"`
}

// Submit stores the change as a request, prints it, announces it, and
// returns the pending-approval error (exit 12): nothing was changed yet.
func Submit(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, g *Gate, c approval.Change, fl Flags, output string, noNotify bool) error {
	r, rec, err := g.Submit(ctx, env.Audit(), c, fl.RequestTTL)
	if err != nil {
		return err
	}
	return Pending(ctx, f, env, r, rec, output, noNotify)
}

// Pending prints a new request r (its record rec), announces it, and
// returns the pending-approval error (exit 12): what every command that
// makes a request ends with.
func Pending(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, r approval.Request, rec audit.Record, output string, noNotify bool) error {
	c := r.Change
	approve := approval.ApproveCommand(r.ID)
	out := Result{Kind: "ChangeRequestResult", Context: env.Name, Store: env.Store.Describe(), RequestID: r.ID, Status: r.Status,
		Change: c.Summary(), SHA256: r.SHA256, Requester: r.Requester, ApprovalsNeeded: r.Needed, Policies: r.Policies,
		ExpiresAt: r.ExpiresAt, ApproveCommand: approve, AuditID: rec.ID}
	ios := f.IOStreams
	if output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, output, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(ios.Out, "Not applied: the table's policy needs %d approval(s) from someone other than you (%v).\n", r.Needed, r.Policies)
		fmt.Fprintf(ios.Out, "Change request %s: %s\n", r.ID, textsafe.Line(c.Summary()))
		fmt.Fprintf(ios.Out, "  sha256 %s\n", r.SHA256)
		fmt.Fprintf(ios.Out, "  expires %s\n", cmdutil.FormatTime(r.ExpiresAt, f.Clock.Now(), ios.IsStdoutTTY()))
		fmt.Fprintf(ios.Out, "Another person approves it with:\n  %s\n", approve)
	}
	cmdenv.PrintActedOn(ios.ErrOut, env, false)
	cmdenv.Notify(ctx, env, noNotify, approval.RequestedEvent(r, rec))
	return exitcode.Errorf(exitcode.Pending, "pending approval: nothing changed yet; request %s waits for %d approval(s) until %s (%s)",
		r.ID, r.Needed, r.ExpiresAt.Format(time.RFC3339), approve)
}
