package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
)

// Audit actions the sandbox records.
const (
	// ActionChaosIgnored: a chaos header was ignored (chaos disabled, a
	// failed check, or a principal without the operator role). Outcome
	// "ignored", subject chaos#<jti> (chaos#unparsed when the value did not
	// parse), after = the chaos.Rejection.
	ActionChaosIgnored = "chaos.ignored"
	// ActionChaosApplied: the first request honoring a header (one record
	// per jti, however many requests carry it).
	ActionChaosApplied = "chaos.applied"
	// ActionKnobSet and ActionKnobCleared: an operator changed a
	// simulator's /admin/chaos knob.
	ActionKnobSet     = "sandbox.chaos-knob.set"
	ActionKnobCleared = "sandbox.chaos-knob.clear"
)

// OutcomeIgnored is the audit outcome of an ignored chaos header.
const OutcomeIgnored = "ignored"

// SubjectUnparsed is the subject of a record about a header that did not
// parse (it has no jti).
const SubjectUnparsed = "chaos#unparsed"

// SubjectSuppressed is the subject of the summary of records suppressed by
// the per-interval cap across all clients.
const SubjectSuppressed = "chaos#suppressed"

// auditQueue is how many records may wait for the store.
const auditQueue = 1024

// auditWriteTimeout bounds one audit write.
const auditWriteTimeout = 5 * time.Second

// IgnoredSummary is the after document of a summary record: the last
// rejection of the interval and how many were counted into it.
type IgnoredSummary struct {
	chaos.Rejection
	// Suppressed counts the ignored headers this record stands for (beyond
	// the one recorded on its own).
	Suppressed int       `json:"suppressed"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
}

type ignoreKey struct{ client, reason string }

type ignoreWindow struct {
	start      time.Time
	suppressed int
	last       chaos.Rejection
}

// auditWriter writes the sandbox's audit records off the request path, and
// rate-limits those of ignored chaos headers: per client and reason, the
// first of an interval is recorded at once and the rest are counted into one
// summary record when the interval ends; across all clients at most
// MaxPerInterval records are written per interval, the excess counted into
// one chaos#suppressed summary. Records never hold a header's signature or
// raw value.
type auditWriter struct {
	log      audit.Appender
	clock    clock.Clock
	logger   *slog.Logger
	m        *metrics
	interval time.Duration
	maxPer   int

	queue chan audit.Entry
	wg    sync.WaitGroup

	mu          sync.Mutex
	closed      bool
	windows     map[ignoreKey]*ignoreWindow
	globalStart time.Time
	globalCount int
	globalSupp  int
	applied     map[string]time.Time // jti → expiry, for one chaos.applied record each
}

func newAuditWriter(log audit.Appender, clk clock.Clock, logger *slog.Logger, m *metrics, s AuditSettings) *auditWriter {
	return &auditWriter{
		log: log, clock: clk, logger: logger, m: m, interval: s.Interval, maxPer: s.MaxPerInterval,
		queue:   make(chan audit.Entry, auditQueue),
		windows: map[ignoreKey]*ignoreWindow{},
		applied: map[string]time.Time{},
	}
}

// start runs the writer and the interval flusher until ctx ends; close then
// flushes what is left.
func (a *auditWriter) start(ctx context.Context) {
	a.wg.Go(func() {
		for e := range a.queue {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
			if _, err := a.log.Append(wctx, e); err != nil {
				a.m.auditFailed.Inc()
				a.logger.LogAttrs(wctx, slog.LevelWarn, "audit record not written",
					slog.String("event", "audit_write_failed"), slog.String("action", e.Action),
					slog.String("subject", e.Subject), slog.String("error", err.Error()))
			}
			cancel()
		}
	})
	a.wg.Go(func() {
		t := time.NewTicker(max(a.interval/4, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a.flush(false)
			}
		}
	})
}

// close flushes every open summary, then waits (within ctx) for the queue to
// drain.
func (a *auditWriter) close(ctx context.Context) error {
	a.flush(true)
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
	a.mu.Unlock()
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush audit records: %w", ctx.Err())
	}
}

// enqueue hands e to the writer without blocking. Call with mu held.
func (a *auditWriter) enqueue(e audit.Entry) {
	if a.closed {
		return
	}
	select {
	case a.queue <- e:
	default:
		a.m.auditDropped.Inc()
	}
}

// take reports whether the global cap admits one more record now. Call with
// mu held.
func (a *auditWriter) take(now time.Time) bool {
	if now.Sub(a.globalStart) >= a.interval {
		a.flushGlobal(now)
		a.globalStart, a.globalCount = now, 0
	}
	if a.globalCount >= a.maxPer {
		return false
	}
	a.globalCount++
	return true
}

// ignored records (or counts) one ignored header.
func (a *auditWriter) ignored(client, reason string, rej chaos.Rejection) {
	now := a.clock.Now()
	key := ignoreKey{client, reason}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.windows[key]; w != nil {
		if now.Sub(w.start) < a.interval {
			w.suppressed++
			w.last = rej
			a.m.auditSummed.Inc()
			return
		}
		a.summarize(key, w, now)
	}
	a.windows[key] = &ignoreWindow{start: now, last: rej}
	if !a.take(now) {
		a.globalSupp++
		a.m.auditSummed.Inc()
		return
	}
	a.enqueue(audit.Entry{Actor: client, Action: ActionChaosIgnored, Subject: rejectionSubject(rej), Outcome: OutcomeIgnored,
		Reason: "chaos header ignored (" + reason + "): " + rej.Reason, After: rej})
}

// summarize enqueues the summary of a window that counted headers. Call with
// mu held.
func (a *auditWriter) summarize(key ignoreKey, w *ignoreWindow, now time.Time) {
	if w.suppressed == 0 {
		return
	}
	if !a.take(now) {
		a.globalSupp += w.suppressed
		return
	}
	a.enqueue(audit.Entry{Actor: key.client, Action: ActionChaosIgnored, Subject: rejectionSubject(w.last), Outcome: OutcomeIgnored,
		Reason: fmt.Sprintf("%d more chaos headers from %s ignored (%s) since %s; audit keeps one record per client and reason per %s",
			w.suppressed, key.client, key.reason, w.start.UTC().Format(time.RFC3339), a.interval),
		After: IgnoredSummary{Rejection: w.last, Suppressed: w.suppressed, Since: w.start.UTC(), Until: now.UTC()}})
}

// flushGlobal enqueues the summary of records the global cap suppressed.
// Call with mu held.
func (a *auditWriter) flushGlobal(now time.Time) {
	if a.globalSupp == 0 {
		return
	}
	a.enqueue(audit.Entry{Actor: "sandbox", Action: ActionChaosIgnored, Subject: SubjectSuppressed, Outcome: OutcomeIgnored,
		Reason: fmt.Sprintf("%d ignored chaos headers not recorded individually since %s: more than %d audit records in %s",
			a.globalSupp, a.globalStart.UTC().Format(time.RFC3339), a.maxPer, a.interval),
		After: IgnoredSummary{Suppressed: a.globalSupp, Since: a.globalStart.UTC(), Until: now.UTC()}})
	a.globalSupp = 0
}

// flush summarizes windows whose interval has ended (all of them when
// final), and forgets expired jtis.
func (a *auditWriter) flush(final bool) {
	now := a.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, w := range a.windows {
		if final || now.Sub(w.start) >= a.interval {
			a.summarize(key, w, now)
			delete(a.windows, key)
		}
	}
	if final || now.Sub(a.globalStart) >= a.interval {
		a.flushGlobal(now)
	}
	for jti, exp := range a.applied {
		if now.After(exp) {
			delete(a.applied, jti)
		}
	}
}

// appliedOnce records the first honoring of a header; later requests with
// the same jti write nothing.
func (a *auditWriter) appliedOnce(client, instance string, h *chaos.Header) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, seen := a.applied[h.JTI]; seen {
		return
	}
	a.applied[h.JTI] = h.ExpTime()
	a.enqueue(audit.Entry{Actor: client, Action: ActionChaosApplied, Subject: "chaos#" + h.JTI,
		Reason: "chaos header honored: " + h.Summary(),
		After: appliedView{KID: h.KID, Target: h.Target, Fault: h.Fault.String(), Ms: h.Ms, P: h.P, IAT: h.IAT, Exp: h.Exp, JTI: h.JTI,
			ExpiresAt: h.ExpTime().UTC(), FirstInstance: instance}})
}

// appliedView is the after document of a chaos.applied record: the signed
// fields, never the signature.
type appliedView struct {
	KID           string       `json:"kid"`
	Target        chaos.Target `json:"target"`
	Fault         string       `json:"fault"`
	Ms            int          `json:"ms,omitempty"`
	P             chaos.Prob   `json:"p"`
	IAT           int64        `json:"iat,omitempty"`
	Exp           int64        `json:"exp"`
	JTI           string       `json:"jti"`
	ExpiresAt     time.Time    `json:"expires_at"`
	FirstInstance string       `json:"first_instance"`
}

func rejectionSubject(r chaos.Rejection) string {
	if r.JTI == "" {
		return SubjectUnparsed
	}
	return "chaos#" + r.JTI
}

// record writes one operator action (knob changes) through the queue.
func (a *auditWriter) record(e audit.Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.enqueue(e)
}
