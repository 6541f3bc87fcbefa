package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultTimeout bounds one notification's delivery to all of a context's
// sinks (they are sent to at once) unless the context sets notify-timeout.
const DefaultTimeout = 5 * time.Second

// ActionFailed is the audit action of the record that says a
// notification did not reach every sink.
const ActionFailed = "notify.failed"

// Notifier announces one change. *[Dispatcher] implements it; a nil
// *Dispatcher, or one without sinks, announces nothing.
type Notifier interface {
	// Notify delivers ev to every sink within the bound and returns what
	// happened. It never fails the change: failures are in the Report (and
	// reported by the implementation), not an error.
	Notify(ctx context.Context, ev Event) Report
}

var _ Notifier = (*Dispatcher)(nil)

// Report is what became of one notification.
type Report struct {
	// Event is the notification as sent (zero when there was no sink).
	Event Event
	// Delivered names the sinks that accepted it.
	Delivered []string
	// Failed lists the sinks that did not, with why.
	Failed []Failure
	// FailureRecord is the id of the notify.failed audit record ("" when
	// every sink accepted, or when the record could not be written).
	FailureRecord string
}

// Failure is one sink that did not accept a notification.
type Failure struct {
	Sink   string `json:"sink"`
	Target string `json:"target"`
	Error  string `json:"error"`
}

// Dispatcher sends each notification to every sink at once, within
// Timeout, and reports each failure in one line and one audit record.
type Dispatcher struct {
	// Context names the koshactl context (Event.Context).
	Context string
	// Source is Event.Source unless the event sets its own.
	Source string
	Sinks  []Sink
	// Timeout bounds a notification; zero means DefaultTimeout. It is
	// measured on Clock (and, as a backstop, on the wall clock).
	Timeout time.Duration
	// Clock stamps events and measures the bound; nil means the wall clock.
	Clock clock.Clock
	// Audit receives the notify.failed record of a notification some sink
	// did not accept; nil records nothing.
	Audit audit.Appender
	// Warn receives one line per failed sink; nil drops them.
	Warn func(line string)
	// Debug, when set, receives one line per delivery attempt (--debug):
	// sink, target (redacted), result and latency.
	Debug io.Writer
}

// For returns a copy of d that stamps events with source unless they set
// their own, and sends its failure lines to warn instead (the dashboard
// holds them while it owns the terminal). A nil d stays nil.
func (d *Dispatcher) For(source string, warn func(line string)) *Dispatcher {
	if d == nil {
		return nil
	}
	c := *d
	c.Source = source
	if warn != nil {
		c.Warn = warn
		c.Debug = nil
	}
	return &c
}

// timeoutError is the cause of a delivery cut off by the bound.
type timeoutError struct{ d time.Duration }

func (e timeoutError) Error() string {
	return fmt.Sprintf("no answer within %s (the notification bound)", e.d)
}

// Notify implements [Notifier]. It returns when every sink answered or
// the bound passed, whichever is first; a sink still sending then is
// reported as failed and left to end with its context.
func (d *Dispatcher) Notify(ctx context.Context, ev Event) Report {
	if d == nil || len(d.Sinks) == 0 {
		return Report{}
	}
	clk := d.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ev = ev.complete(newID(), clk.Now(), d.Context, d.Source)
	// The change is made: an interrupt from now on does not cancel its
	// announcement, which the bound ends anyway.
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	bound := timeoutError{timeout}
	go func() {
		wall := time.NewTimer(timeout)
		defer wall.Stop()
		select {
		case <-clock.After(clk, timeout):
		case <-wall.C:
		case <-sctx.Done():
		}
		cancel(bound)
	}()
	type result struct {
		i   int
		err error
		dur time.Duration
	}
	results := make(chan result, len(d.Sinks))
	for i, s := range d.Sinks {
		go func() {
			start := clk.Now()
			err := s.Send(sctx, ev)
			results <- result{i: i, err: err, dur: clk.Now().Sub(start)}
		}()
	}
	errs := make([]error, len(d.Sinks))
	answered := make([]bool, len(d.Sinks))
	for n := 0; n < len(d.Sinks); n++ {
		select {
		case r := <-results:
			errs[r.i], answered[r.i] = r.err, true
			d.debugf("notify: %s (%s): %s in %s", textsafe.Line(d.Sinks[r.i].Name()), d.Sinks[r.i].Target(), outcome(r.err, sctx, bound), r.dur.Round(time.Millisecond))
		case <-sctx.Done():
			n = len(d.Sinks)
		}
	}
	// Answers that arrived with the bound still count.
	for drained := false; !drained; {
		select {
		case r := <-results:
			errs[r.i], answered[r.i] = r.err, true
		default:
			drained = true
		}
	}
	rep := Report{Event: ev}
	for i, sk := range d.Sinks {
		var err error
		switch {
		case !answered[i]:
			err = bound
			d.debugf("notify: %s (%s): %s", textsafe.Line(sk.Name()), sk.Target(), bound)
		case errs[i] != nil && sctx.Err() != nil && errors.Is(errs[i], context.Canceled):
			err = bound
		default:
			err = errs[i]
		}
		if err == nil {
			rep.Delivered = append(rep.Delivered, sk.Name())
			continue
		}
		rep.Failed = append(rep.Failed, Failure{Sink: sk.Name(), Target: sk.Target(), Error: textsafe.Line(err.Error())})
	}
	if len(rep.Failed) == 0 {
		return rep
	}
	note := "not recorded: no audit log"
	if d.Audit != nil {
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		rec, err := d.Audit.Append(actx, audit.Entry{Actor: ev.failureActor(), Action: ActionFailed, Subject: "notify#" + ev.ID,
			Outcome: "failed", After: failureState{NotificationID: ev.ID, Action: ev.Action, AuditIDs: ev.AuditIDs,
				Failed: rep.Failed, Delivered: rep.Delivered}})
		acancel()
		if err != nil {
			note = "its notify.failed audit record could not be written: " + textsafe.Line(err.Error())
		} else {
			rep.FailureRecord = rec.ID
			note = "recorded in audit record " + rec.ID
		}
	}
	if d.Warn != nil {
		for _, f := range rep.Failed {
			d.Warn(fmt.Sprintf("warning: notification %s to %s (%s) failed: %s; the change stands (%s)", ev.ID, textsafe.Line(f.Sink), f.Target, f.Error, note))
		}
	}
	return rep
}

// failureState is the after-image of a notify.failed record.
type failureState struct {
	NotificationID string    `json:"notification_id"`
	Action         string    `json:"action"`
	AuditIDs       []string  `json:"audit_ids"`
	Failed         []Failure `json:"failed"`
	Delivered      []string  `json:"delivered"`
}

func outcome(err error, sctx context.Context, bound error) string {
	switch {
	case err == nil:
		return "delivered"
	case sctx.Err() != nil && errors.Is(err, context.Canceled):
		return bound.Error()
	}
	return "failed: " + textsafe.Line(err.Error())
}

func (d *Dispatcher) debugf(format string, args ...any) {
	if d.Debug != nil {
		fmt.Fprintf(d.Debug, format+"\n", args...)
	}
}
