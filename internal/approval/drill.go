package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// ActionDrillRun is the action of a change request that approves a drill
// run: one drill file (its SHA-256), on one context, pulling the levers its
// plan names. Approving it applies nothing: the request becomes approved,
// and `koshactl drill run FILE --request ID` may then pull those levers
// until the request expires.
const ActionDrillRun = "drill.run"

// StatusApproved is the status of a drill.run request with its approvals:
// nothing was applied; the drill may run with it until it expires.
const StatusApproved = "approved"

// DrillLever is one lever a drill pulls, as the table's policy judges it.
type DrillLever struct {
	Action string `json:"action"`
	// Target is the dependency or client; empty when it comes from a
	// step's output (unknown until the run: the policy cannot judge it).
	Target string `json:"target"`
	// DurationSeconds bounds how long a force lasts (0 for other levers).
	DurationSeconds int64 `json:"duration_seconds,omitempty"`
}

func (l DrillLever) String() string {
	t := l.Target
	if t == "" {
		t = "(a step's output)"
	}
	return l.Action + " " + t
}

// DrillRun is a drill run as the policy and a drill.run request see it.
type DrillRun struct {
	// File is the drill file's name; Name the drill's name.
	File string `json:"file"`
	Name string `json:"name"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256  string `json:"sha256"`
	Context string `json:"context"`
	// Levers are the levers its steps pull, with the variables resolved,
	// in step order without repeats.
	Levers []DrillLever `json:"levers"`
}

// judged are the levers of d a policy names (a lever kind's actions; a
// chaos header is none), without repeats.
func (s *Service) judged(d DrillRun) []DrillLever {
	var out []DrillLever
	for _, l := range d.Levers {
		if _, err := s.kind(l.Action); err == nil && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// drillChange is the change a drill.run request holds for d.
func (s *Service) drillChange(d DrillRun, reason string) Change {
	levers := s.judged(d)
	c := Change{Action: ActionDrillRun, Reason: reason, Drill: &DrillRun{File: d.File, Name: d.Name, SHA256: d.SHA256, Context: d.Context, Levers: levers}}
	for _, l := range levers {
		c.Targets = append(c.Targets, l.String())
	}
	return c
}

func drillSummary(c Change) string {
	d := c.Drill
	if d == nil {
		return "run a drill"
	}
	return fmt.Sprintf("run drill %s (%s, sha256 %s) on %s: %s", d.Name, d.File, proof.Short(d.SHA256), d.Context, strings.Join(c.Targets, ", "))
}

// question is the policy's question of pulling l (no actor).
func (s *Service) question(l DrillLever) policy.Request {
	return policy.Request{Action: l.Action, Resource: s.resource(l.Action), Target: l.Target, Duration: time.Duration(l.DurationSeconds) * time.Second}
}

// decideDrill is the table's policy (set; nil: none) on a drill's levers
// pulled by actor: the strictest answer over every lever it names, as
// [policy.DecideEach]. A lever whose target is known only during the run
// is denied: the policy cannot judge it before.
func (s *Service) decideDrill(set *policy.Set, actor policy.Actor, levers []DrillLever) policy.Decision {
	if set == nil {
		return policy.NoPolicy
	}
	var qs []policy.Request
	for _, l := range levers {
		if l.Target == "" {
			if d := policy.DecideEach(set, qs); d.Outcome == policy.Deny {
				return d // a lever before it is denied already
			}
			return policy.Decision{Outcome: policy.Deny, Reason: fmt.Sprintf("the target of a %s lever comes from a step's output, which the table's policy cannot judge before the run: name it in the file or with a var", l.Action)}
		}
		q := s.question(l)
		q.Actor = actor
		qs = append(qs, q)
	}
	out := policy.DecideEach(set, qs)
	if out.Reason == "" {
		out.Reason = "the drill pulls no lever the policy names"
	}
	return out
}

// readDrill reads the table's policy (nil: none) and, when id is set,
// request id, in one batch read.
func (s *Service) readDrill(ctx context.Context, id string) (*policy.Stored, store.Item, error) {
	keys := []string{policy.Key}
	if id != "" {
		keys = append(keys, RequestPrefix+id)
	}
	items, err := store.GetMany(ctx, s.store, keys)
	if err != nil {
		return nil, nil, fmt.Errorf("read the table's policy: %w", err)
	}
	stored, err := s.PolicyIn(items)
	return stored, items[RequestPrefix+id], err
}

// ErrDrillNoApproval: a drill pulls levers the table's policy needs
// approvals for, and no drill.run request was given (exit 12).
var ErrDrillNoApproval = exitcode.New(exitcode.Pending, "the drill needs an approved drill request")

// SubmitDrill stores a pending drill.run request for d by requester, when
// the table's policy needs approvals for any of its levers (else it is an
// error saying so: nothing to ask for), in one transaction with its audit
// record.
func (s *Service) SubmitDrill(ctx context.Context, log audit.Appender, d DrillRun, requester audit.Identity, reason string, ttl time.Duration) (Request, audit.Record, error) {
	stored, _, err := s.readDrill(ctx, "")
	if err != nil {
		return Request{}, audit.Record{}, err
	}
	if stored == nil {
		return Request{}, audit.Record{}, fmt.Errorf("drill %s needs no approval: the table has no policy; run it with koshactl drill run %s", textsafe.Line(d.Name), textsafe.Line(d.File))
	}
	dec := s.decideDrill(stored.Set, policy.Actor{ARN: requester.Actor, Verified: requester.Verified()}, s.judged(d))
	switch dec.Outcome {
	case policy.Deny:
		return Request{}, audit.Record{}, fmt.Errorf("%w: drill %s: %s", ErrPolicyDenied, textsafe.Line(d.Name), dec.Reason)
	case policy.Allow:
		return Request{}, audit.Record{}, fmt.Errorf("drill %s needs no approval (%s): run it with koshactl drill run %s", textsafe.Line(d.Name), dec.Reason, textsafe.Line(d.File))
	case policy.NeedsApproval:
	}
	return s.Submit(ctx, log, Submission{Change: s.drillChange(d, reason), Requester: requester, Decision: dec, TTL: ttl})
}

// DrillAuthorization is what [Service.AuthorizeDrill] found.
type DrillAuthorization struct {
	Decision policy.Decision
	// Request is the approved drill.run request the run goes on with
	// (nil when the policy needs none).
	Request *Request
}

// AuthorizeDrill is the rule a drill run follows before it pulls any
// lever: on a table whose policy needs approvals for any of d's levers
// when runner pulls them (asked only then), the run needs requestID, an approved, unexpired
// drill.run request for this file's hash, this context and these levers.
// It reads the policy and the request in one batch read and writes
// nothing. Refused: no request ([ErrDrillNoApproval], exit 12), one still
// pending (exit 12), closed or expired ([ErrClosed], [ErrExpired], exit
// 13), one for another file, context or levers ([ErrHashMismatch], exit
// 14), a lever the policy denies ([ErrPolicyDenied]).
func (s *Service) AuthorizeDrill(ctx context.Context, d DrillRun, runner func(context.Context) (audit.Identity, error), requestID string) (DrillAuthorization, error) {
	stored, it, err := s.readDrill(ctx, requestID)
	if err != nil {
		return DrillAuthorization{}, err
	}
	levers := s.judged(d)
	if stored == nil || len(levers) == 0 {
		return DrillAuthorization{Decision: policy.NoPolicy}, nil
	}
	id, err := runner(ctx)
	if err != nil {
		return DrillAuthorization{}, err
	}
	dec := s.decideDrill(stored.Set, policy.Actor{ARN: id.Actor, Verified: id.Verified()}, levers)
	res := DrillAuthorization{Decision: dec}
	switch dec.Outcome {
	case policy.Deny:
		return res, fmt.Errorf("%w: drill %s: %s", ErrPolicyDenied, textsafe.Line(d.Name), dec.Reason)
	case policy.Allow:
		return res, nil
	case policy.NeedsApproval:
	}
	if requestID == "" {
		return res, fmt.Errorf("%w: %s; ask for it with koshactl drill request %s, then run with --request ID once approved",
			ErrDrillNoApproval, dec.Reason, textsafe.Line(d.File))
	}
	if it == nil {
		return res, notFound(requestID)
	}
	r, err := RequestFromItem(it)
	if err != nil {
		return res, err
	}
	if err := r.Check(""); err != nil {
		return res, err
	}
	ask := "ask for a new one with koshactl drill request " + textsafe.Line(d.File)
	if r.Change.Action != ActionDrillRun || r.Change.Drill == nil {
		return res, fmt.Errorf("%w: request %s asks for %s, not a drill run: %s", ErrHashMismatch, r.ID, textsafe.Line(r.Change.Summary()), ask)
	}
	now := s.clock.Now()
	switch st := r.StatusAt(now); st {
	case StatusApproved:
	case StatusPending:
		return res, exitcode.Errorf(exitcode.Pending, "request %s still waits for %d approval(s) (until %s): nothing was done; run again once it is approved (%s)",
			r.ID, r.Needed-len(r.Approvers), r.ExpiresAt.Format(time.RFC3339), ApproveCommand(r.ID))
	case StatusExpired:
		return res, fmt.Errorf("%w: request %s expired at %s: %s", ErrExpired, r.ID, r.ExpiresAt.Format(time.RFC3339), ask)
	default:
		return res, fmt.Errorf("%w: request %s was %s by %s: %s", ErrClosed, r.ID, st, textsafe.Line(r.DecidedBy), ask)
	}
	got := r.Change.Drill
	switch {
	case got.SHA256 != d.SHA256:
		return res, fmt.Errorf("%w: request %s approves %s with sha256 %s, but the file now hashes to %s: it was edited since; %s",
			ErrHashMismatch, r.ID, textsafe.Line(got.File), proof.Short(got.SHA256), proof.Short(d.SHA256), ask)
	case got.Context != d.Context:
		return res, fmt.Errorf("%w: request %s approves the drill on context %s, not %s: %s",
			ErrHashMismatch, r.ID, textsafe.Quote(got.Context), textsafe.Quote(d.Context), ask)
	case !slices.Equal(got.Levers, levers):
		return res, fmt.Errorf("%w: request %s approves the levers %s, but this run would pull %s (another --var?): %s",
			ErrHashMismatch, r.ID, textsafe.Line(leverList(got.Levers)), textsafe.Line(leverList(levers)), ask)
	}
	if err := s.proveApproved(ctx, r, stored); err != nil {
		return res, err
	}
	res.Request = &r
	return res, nil
}

func leverList(ls []DrillLever) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.String()
	}
	return "[" + strings.Join(s, ", ") + "]"
}
