package breaker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
)

// Overrides is the breaker lever service: it reads breaker overrides on a
// store and changes them with the operations users have (force, clear,
// restore, and a levers file's reconcile). It is built once per context
// (by the command factory, the dashboard, a drill run) with everything a
// change needs bound in: the audit log the records go to ([Overrides.WithLog]),
// the context's duration policy ([Overrides.WithDurations]) and who hears
// of a change ([Overrides.WithAnnounce]). It enforces every rule of a
// change (names, reason, duration policy, no expiry only when confirmed; a
// levers file's window by [Overrides.checkPlanned]; a restore puts back
// what was there, checked by its caller with [CheckRestore]), writes each change as one transaction holding the overrides' writes,
// each conditional on the item as read (two operators acting at once never
// overwrite each other silently), and their audit records, and announces
// what was written after the commit. Callers word its errors; they decide
// nothing of their own.
type Overrides struct {
	store     OverrideStore
	clock     clock.Clock
	notices   *noticeSink
	log       audit.Appender
	durations DurationPolicy
	announce  func(ctx context.Context, c Announcement)
}

// NewOverrides returns an Overrides on s that reads, and changes nothing
// until an audit log is bound ([Overrides.WithLog]); the duration policy is
// the default one. A nil clk means the wall clock.
func NewOverrides(s OverrideStore, clk clock.Clock) *Overrides {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Overrides{store: s, clock: clk, notices: &noticeSink{}}
}

// WithLog returns the service writing every change's audit records to log
// (a drill run's records carry its run id: the run binds its own).
func (s *Overrides) WithLog(log audit.Appender) *Overrides {
	c := *s
	c.log = log
	return &c
}

// WithDurations returns the service applying p to every new override: a
// duration or an expiry outside it is refused with a *[DurationError]
// before anything is read.
func (s *Overrides) WithDurations(p DurationPolicy) *Overrides {
	c := *s
	c.durations = p
	return &c
}

// WithAnnounce returns the service calling announce once after each force
// or clear that wrote something, with what it wrote: never on a dry run, a
// refusal, a change the store did not take, or one whose caller asked for
// quiet (--no-notify). A restore (a drill's rollback, announced with its
// run) and a reconcile (a levers file's apply, announced as its window's
// change) announce nothing here.
func (s *Overrides) WithAnnounce(announce func(ctx context.Context, c Announcement)) *Overrides {
	c := *s
	c.announce = announce
	return &c
}

// Durations is the duration policy the service applies.
func (s *Overrides) Durations() DurationPolicy { return s.durations }

// Announcement is one committed change, as the service's announcer hears
// it: the written outcomes of one operation, in request order.
type Announcement struct {
	// Action is [ActionForceOpen] or [ActionClear] (a reconcile announces
	// its forces and its clears as one each).
	Action string
	Reason string
	// Actor is who acted, as recorded.
	Actor  string
	Forces []ForceOutcome
	Clears []ClearOutcome
	// Note is what the operation asked to be said with it (a break-glass
	// change's review): its Outcome and Detail words.
	Note Note
}

// Note is what an operation asks its announcement to say besides its levers.
type Note struct {
	Outcome, Detail string
}

// ErrNoAuditLog reports a change asked of an Overrides with no audit log
// bound: nothing is written, since nothing would record it.
var ErrNoAuditLog = errors.New("breaker overrides: no audit log bound to record the change (a wiring bug)")

// announceWritten tells the announcer of what a wrote (its outcomes that
// were written), unless quiet or nothing was: who acted is the records'
// actor, and a force's reason its overrides'.
func (s *Overrides) announceWritten(ctx context.Context, quiet bool, a Announcement) {
	a.Forces = slices.DeleteFunc(slices.Clone(a.Forces), func(o ForceOutcome) bool { return !o.Written })
	a.Clears = slices.DeleteFunc(slices.Clone(a.Clears), func(o ClearOutcome) bool { return !o.Written })
	switch {
	case quiet || s.announce == nil:
		return
	case len(a.Forces) > 0:
		a.Actor, a.Reason = a.Forces[0].Record.Actor, a.Forces[0].Result.After.Reason
	case len(a.Clears) > 0:
		a.Actor = a.Clears[0].Record.Actor
	default:
		return
	}
	s.announce(ctx, a)
}

// checkLifetime applies the service's duration policy to a new override
// asked at now: a duration (For), an expiry (ExpiresAt, as [LastUntil]), or
// none, which only a request that says so (NoExpiry, the operator's
// confirmation) may ask.
func (s *Overrides) checkLifetime(req ForceRequest, now time.Time) error {
	switch {
	case req.For != 0:
		return s.durations.CheckFor(req.For)
	case !req.ExpiresAt.IsZero():
		_, _, err := s.durations.ExpiresAt(now, LastUntil(req.ExpiresAt))
		return err
	case !req.NoExpiry:
		return ErrNoExpiryUnconfirmed
	}
	return nil
}

// checkPlanned applies the rules of a force to one a levers file planned
// for a window: a reason, an expiry, still ahead and at most the policy's
// maximum away. The minimum does not apply: a window near its end has
// less than [MinOverride] left, and what is left of it is what the file
// asks.
func (s *Overrides) checkPlanned(req ForceRequest) error {
	if err := CheckForceReason(req.Reason); err != nil {
		return err
	}
	now := s.clock.Now()
	expires := req.ExpiresAt
	if req.For != 0 {
		expires = now.Add(req.For)
	}
	switch left := expires.Sub(now); {
	case expires.IsZero():
		return fmt.Errorf("a planned window has an end: %w", ErrNoExpiryUnconfirmed)
	case left <= 0:
		return &DurationError{Problem: ErrExpiryPast, Duration: left}
	case left > s.durations.MaxFor():
		return &DurationError{Problem: ErrDurationTooLong, Duration: left, Limit: s.durations.MaxFor()}
	}
	return nil
}

// checkQuiet refuses a quiet (NoNotify) change that the table's policy
// let through as a break-glass ([audit.ErrBreakGlassQuiet]).
func checkQuiet(noNotify bool, at *Attach) error {
	if noNotify && at != nil && at.Approval.BreakGlass() {
		return audit.ErrBreakGlassQuiet
	}
	return nil
}

// changeLog is the bound audit log, or ErrNoAuditLog.
func (s *Overrides) changeLog() (audit.Appender, error) {
	if s.log == nil {
		return nil, ErrNoAuditLog
	}
	return s.log, nil
}

// note is the attach's note when it has one, else n.
func (at *Attach) note(n Note) Note {
	if at != nil && at.Note != (Note{}) {
		return at.Note
	}
	return n
}
