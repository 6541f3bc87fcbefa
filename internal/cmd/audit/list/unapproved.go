package list

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// readPolicySince reads the since of the table's policy (zero, has false:
// the table has none). For --unapproved (strict), a policy item without a
// since is refused: koshactl cannot tell which changes should have asked
// it, and a guard that cannot be evaluated is a reason to stop.
func readPolicySince(ctx context.Context, env *cmdenv.Env, strict bool) (since time.Time, has bool, err error) {
	since, has, err = env.Policies().Since(ctx)
	if err == nil && strict && has && since.IsZero() {
		err = fmt.Errorf("%w: %s has no since attribute (N), so no change can be judged unapproved: an admin sets the policy again with koshactl policy set FILE",
			policy.ErrStoredInvalid, policy.Key)
	}
	return since, has, err
}

// unapprovedSince is the since --unapproved lists from, and what is wrong
// with the table's policy against its policy.set proofs ("" when nothing:
// policy.Standing). On a table without a policy (nor a proof of one) since
// is zero, said in one line on stderr: no change can be unapproved, and
// nothing is listed (a follow lists the changes made after one is set). A
// policy item its proofs do not prove (a direct Put, a deleted item, one
// put back) is said on stderr at once; the listing then ends with exit 1,
// and lists from the table's first policy (the oldest proof's, when the
// item is gone).
func unapprovedSince(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, following bool) (time.Time, string, error) {
	since, has, err := readPolicySince(ctx, env, true)
	if err != nil {
		return since, "", err
	}
	st, err := env.Policies().Standing(ctx, env.Store)
	if err != nil {
		return since, "", err
	}
	if st.Problem != "" {
		if following {
			fmt.Fprintf(f.IOStreams.ErrOut, "error: the table's policy is not what its policy.set proofs say: %s\n", textsafe.Line(st.Problem))
		}
		if since.IsZero() {
			since = st.Since
		}
		return since, st.Problem, nil
	}
	if !has {
		then := "nothing is listed"
		if following {
			then = "following: changes made after one is set will be"
		}
		cmdutil.Notice(f.IOStreams.ErrOut)(fmt.Sprintf("note: context %q: the table has no change policy, so no lever change can be unapproved; %s", env.Name, then))
	}
	return since, "", nil
}

// onlyUnapproved narrows q to the records sch flags unapproved by the
// since *since holds when they are read (a follow reads the policy again
// before each read): none before it is read at all.
func onlyUnapproved(sch *policy.Schema, q audit.Query, since *time.Time) audit.Query {
	if q.Since.Before(*since) {
		q.Since = *since
	}
	q.Keep = func(r audit.Record) bool { return sch.Unapproved(r, *since) }
	return q
}

// foundUnapproved is how --unapproved ends: exit 1 when it listed n > 0
// changes, or the table's policy is not what its proofs say (problem);
// else partial (the listing's own error, said with it).
func foundUnapproved(n int, since time.Time, partial error, problem string) error {
	if n == 0 && problem == "" {
		return partial
	}
	var what []string
	if problem != "" {
		what = append(what, "the table's policy is not what its policy.set proofs say ("+textsafe.Line(problem)+"): find out who wrote it; an admin sets the right one with koshactl policy set FILE")
	}
	switch {
	case n == 1:
		what = append(what, "1 unapproved lever change")
	case n > 1:
		what = append(what, fmt.Sprintf("%d unapproved lever changes", n))
	}
	msg := strings.Join(what, "; and ")
	if n > 0 {
		msg += fmt.Sprintf(": recorded since the table's policy was set (%s) without an approval, so made without asking it; find out who made it and why (docs/contracts/policy.md, \"What koshactl cannot prevent\")",
			since.UTC().Format(time.RFC3339))
	}
	if partial != nil {
		msg += "; " + partial.Error()
	}
	return exitcode.Errorf(exitcode.Error, "%s", msg)
}

// announcer sends each flagged record's notification (policy.bypassed)
// once per process: a follow that meets a record again announces nothing
// more. A nil announcer announces nothing (no --notify).
type announcer struct {
	env       *cmdenv.Env
	reporter  string
	announced map[string]bool
}

// newAnnouncer is --notify's: the context must have a sink (a detection
// nobody hears is refused, not silently dropped), and who announces is
// named in each notification.
func newAnnouncer(ctx context.Context, env *cmdenv.Env) (*announcer, error) {
	if env.Notifier == nil {
		return nil, cmdutil.Usagef("--notify: context %q has no notification sinks: add one (koshactl config set-context %s --notify-webhook-env VAR, docs/notifications.md) or drop --notify", env.Name, env.Name)
	}
	reporter, err := env.Actor(ctx)
	if err != nil {
		return nil, err
	}
	return &announcer{env: env, reporter: reporter, announced: map[string]bool{}}, nil
}

// announce sends r's notification unless it was sent already. Delivery
// failures are reported by the notifier (stderr, a notify.failed record)
// and do not change the exit code.
func (a *announcer) announce(ctx context.Context, r audit.Record, since time.Time) {
	if a == nil || a.announced[r.ID] {
		return
	}
	a.announced[r.ID] = true
	cmdenv.Notify(ctx, a.env, false, notify.BypassedEvent(r, since, a.reporter))
}
