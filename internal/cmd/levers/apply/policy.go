package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/levers"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// approvals are how the table's policy let a round's changes through, by
// action and dependency.
type approvals map[string]*audit.Approval

// of is how the policy let c through (nil: it was not asked).
func (a approvals) of(c lever.Change) *audit.Approval { return a[c.Action+" "+c.Targets[0]] }

// authorize asks the table's policy about each change of ds (none: every
// change goes as planned), decided on read, the policy and the windows'
// requests as read with the overrides (approval.WindowKeys of the windows
// in force), by who identity says acts. A force goes when the policy
// allows it, or with its window's approved request; a clear when the
// policy allows it (else the override lapses at its window's end). It
// returns the changes that may go, their approvals, and why the others may
// not (nil: all go).
func authorize(ctx context.Context, env *cmdenv.Env, file *levers.File, ds []levers.Difference, read map[string]store.Item,
	identity func() (audit.Identity, error)) ([]levers.Difference, approvals, error, error) {
	svc := env.Approvals()
	var ws []approval.Window
	for _, d := range ds {
		if d.Action == levers.ActionForce {
			ws = append(ws, file.ApprovalWindow(*d.Window, d.Start, env.Name))
		}
	}
	stored, err := svc.PolicyIn(read)
	if err != nil || stored == nil {
		return ds, nil, nil, err
	}
	id, err := identity()
	if err != nil {
		return nil, nil, nil, err
	}
	var keep []levers.Difference
	out := approvals{}
	var refused []error
	forces := 0
	for _, d := range ds {
		switch d.Action {
		case levers.ActionForce:
			auth, err := svc.AuthorizeWindow(ctx, stored, read, ws[forces], id)
			forces++
			if err != nil {
				refused = append(refused, err)
				continue
			}
			out[breaker.ActionForceOpen+" "+d.Dependency] = auth.Approval()
		case levers.ActionClear:
			dec := policy.Decide(stored.Set, policy.Request{Actor: policy.Actor{ARN: id.Actor, Verified: id.Verified()}, Action: breaker.ActionClear,
				Resource: breaker.Spec.Resource, Target: d.Dependency})
			if dec.Outcome != policy.Allow {
				refused = append(refused, exitcode.Errorf(exitcode.Pending, "%s's override is left to lapse at its expiry: the table's policy does not let apply clear it (%s)",
					d.Dependency, dec.Reason))
				continue
			}
			out[breaker.ActionClear+" "+d.Dependency] = &audit.Approval{Decision: audit.DecisionAllowed, Policies: dec.Policies}
		}
		keep = append(keep, d)
	}
	return keep, out, errors.Join(refused...), nil
}

// requestWindows asks for the approval of each window in force or to
// come (its occurrence in force or next), on a table whose policy needs
// it: a request named by the window's content and occurrence, waiting
// until the occurrence ends. Asking again finds the same request.
func requestWindows(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, file *levers.File, opts *Options) error {
	stored, err := env.Policies().Load(ctx)
	if err != nil {
		return err
	}
	if stored == nil {
		return fmt.Errorf("the table has no change policy: its windows need no approval; apply them with koshactl apply -f %s", textsafe.Quote(opts.File))
	}
	id, err := env.CallerIdentity(ctx)
	if err != nil {
		return err
	}
	svc := env.Approvals()
	now := f.Clock.Now()
	out := f.IOStreams.Out
	pending := 0
	var failed []error
	for _, w := range file.Windows {
		start, end, ok := w.Next(now)
		if !ok {
			continue
		}
		aw := file.ApprovalWindow(w, start, env.Name)
		reason := fmt.Sprintf("levers %s window %s: %s", file.Name, w.ID, w.Reason)
		r, rec, existing, err := svc.SubmitWindow(ctx, env.Audit(), aw, id, audit.TruncateReason(reason), end)
		switch {
		case errors.Is(err, approval.ErrWindowNeedsNone):
			fmt.Fprintf(out, "window %s: no approval needed (%s)\n", textsafe.Line(w.ID), textsafe.Line(err.Error()))
			continue
		case err != nil:
			failed = append(failed, err)
			fmt.Fprintf(out, "window %s: %s\n", textsafe.Line(w.ID), textsafe.Line(err.Error()))
			continue
		}
		st := r.StatusAt(now)
		if st == approval.StatusPending {
			pending++
		}
		what := "requested"
		if existing {
			what = "already requested"
		}
		fmt.Fprintf(out, "window %s (%s %s): %s as %s, %s until %s; approve: %s\n", textsafe.Line(w.ID), textsafe.Line(w.Dependency),
			start.UTC().Format(time.RFC3339), what, r.ID, st, r.ExpiresAt.UTC().Format(time.RFC3339), approval.ApproveCommand(r.ID))
		if !existing {
			cmdenv.Notify(ctx, env, opts.NoNotify, approval.RequestedEvent(r, rec))
		}
	}
	cmdenv.PrintActedOn(f.IOStreams.ErrOut, env, false)
	if err := errors.Join(failed...); err != nil {
		return err
	}
	if pending > 0 {
		return exitcode.Errorf(exitcode.Pending, "%d window request(s) wait for their approvals: nothing is applied until they are approved", pending)
	}
	return nil
}
