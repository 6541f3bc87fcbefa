package runner

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// Caps on what a run records for its report, so a long soak with a short
// poll interval cannot grow the journal without bound: past them a sample
// or an evaluation is recorded only when it differs from the one before.
const (
	maxGaugeSamples    = 2000
	maxStopEvaluations = 2000
)

// journalingGauges records every breaker_state read the run's conditions
// make in the journal (gauge_samples), for the game-day report.
// Its Describe is the reader's it records.
type journalingGauges struct {
	runtime.GaugeReader
	r  *runJournal
	rc *runtime.RunContext
}

var _ runtime.GaugeReader = (*journalingGauges)(nil)

// Unwrap returns the reader it records, for [runtime.SourcerOf].
func (g *journalingGauges) Unwrap() runtime.GaugeReader { return g.GaugeReader }

func (g *journalingGauges) Read(ctx context.Context, dependency string) (runtime.GaugeReading, error) {
	reading, err := g.GaugeReader.Read(ctx, dependency)
	if err != nil && ctx.Err() != nil {
		return reading, err // the poll was ended, not answered
	}
	s := drill.GaugeSample{At: g.rc.Now().UTC(), Dependency: dependency, Instances: []drill.InstanceSample{}}
	if err != nil {
		s.Error = err.Error()
	}
	for _, in := range reading.Instances {
		s.Instances = append(s.Instances, drill.InstanceSample{Instance: in.Instance, State: in.State.String()})
	}
	g.r.redact(&s.Error)
	g.r.update(func() {
		j := g.r.journal
		j.GaugeSamples = appendCapped(j.GaugeSamples, s, maxGaugeSamples, func(p drill.GaugeSample) bool { return p.Dependency == dependency },
			func(p drill.GaugeSample) bool { return p.Error == s.Error && slices.Equal(p.Instances, s.Instances) })
	})
	return reading, err
}

// appendCapped appends v to s; past limit entries, only when the last entry
// of v's series (the last of s that inSeries) is not the same as v.
func appendCapped[T any](s []T, v T, limit int, inSeries, same func(T) bool) []T {
	for i := len(s) - 1; len(s) >= limit && i >= 0; i-- {
		if inSeries(s[i]) {
			if same(s[i]) {
				return s
			}
			break
		}
	}
	return append(s, v)
}

// journalingAudit names in the journal (audit) every audit record the run
// wrote, so a report names each change's record: a record appended on its
// own when its append returns, and a lever's records, staged into the
// lever's transaction, when the step reports its change committed
// ([runtime.RunContext.Recorded]). A staged record whose change failed is
// never named. Each record is named once. Its Stage is inner's: it names
// nothing, the record exists only if its change commits.
type journalingAudit struct {
	audit.Appender
	add func(drill.AuditRef)

	mu    sync.Mutex
	named map[string]bool
}

var (
	_ audit.Appender   = (*journalingAudit)(nil)
	_ runtime.Recorder = (*journalingAudit)(nil)
)

func newJournalingAudit(inner audit.Appender, add func(drill.AuditRef)) *journalingAudit {
	return &journalingAudit{Appender: inner, add: add, named: map[string]bool{}}
}

func (a *journalingAudit) Append(ctx context.Context, e audit.Entry) (audit.Record, error) {
	rec, err := a.Appender.Append(ctx, e)
	if err == nil {
		a.Recorded(rec)
	}
	return rec, err
}

// Recorded names recs, records of a change that committed.
func (a *journalingAudit) Recorded(recs ...audit.Record) {
	for _, rec := range recs {
		a.mu.Lock()
		seen := rec.ID == "" || a.named[rec.ID]
		a.named[rec.ID] = true
		a.mu.Unlock()
		if !seen {
			ref := drill.AuditRef{ID: rec.ID, At: rec.Time.UTC(), Action: rec.Action, Subject: rec.Subject}
			if im := rec.Impact; im != nil {
				ref.Impact = &drill.LeverImpact{Tools: []drill.ToolRate{}, RatesSource: im.RatesSource, RatesError: im.RatesError}
				for _, t := range im.Tools {
					ref.Impact.Tools = append(ref.Impact.Tools, drill.ToolRate{Tool: t.Tool, Behaviour: t.Behaviour, CallsPerMinute: t.CallsPerMinute})
				}
			}
			a.add(ref)
		}
	}
}

// recordStop records one evaluation of a stop condition.
func (r *runJournal) recordStop(e drill.StopEvaluation) {
	r.redact(&e.Detail, &e.Error)
	r.update(func() {
		j := r.journal
		j.StopEvaluations = appendCapped(j.StopEvaluations, e, maxStopEvaluations, func(p drill.StopEvaluation) bool { return p.Condition == e.Condition },
			func(p drill.StopEvaluation) bool {
				return p.Holds == e.Holds && p.Error == e.Error && p.Detail == e.Detail
			})
	})
}

// recordCheck records rec, an evaluation of the preflight or of the
// hypothesis before or after (its Phase), and emits it.
func (r *runJournal) recordCheck(rec drill.CheckRecord) {
	r.mu.Lock()
	j := r.journal
	list := map[string]*[]drill.CheckRecord{drill.PhasePreflight: &j.Preflight, drill.PhaseBefore: &j.Hypothesis.Before,
		drill.PhaseAfter: &j.Hypothesis.After}[rec.Phase]
	*list = append(*list, rec)
	p := &(*list)[len(*list)-1]
	r.mu.Unlock()
	r.emit(Event{Kind: EventCheckDone, Phase: rec.Phase, Check: p})
}

// recording returns the run's services with the gauge reader and the
// audit log recording into the journal.
func (r *runJournal) recording(rc *runtime.RunContext) *runtime.Deps {
	own := *rc.Deps
	if own.Gauges != nil {
		own.Gauges = &journalingGauges{GaugeReader: own.Gauges, r: r, rc: rc}
	}
	if own.Audit != nil {
		own.Audit = newJournalingAudit(own.Audit, func(a drill.AuditRef) {
			r.update(func() { r.journal.Audit = append(r.journal.Audit, a) })
		})
	}
	return &own
}

// runJournal is a run's journal as the run writes it. It owns the lock
// every change of the journal takes (reporters may be reading it from
// another goroutine's event), the caps on what a long run records, the
// redaction of the run's secrets from what it records, and the events the
// reporters receive, one at a time.
type runJournal struct {
	mu        sync.Mutex
	journal   *drill.Journal
	rc        *runtime.RunContext
	reporters []Reporter
	// clock stamps events; nil means the wall clock.
	clock clock.Clock
	// rbs[i] is the rollback of journal.Rollbacks[i]: the run's stack of
	// rollbacks, in registration order.
	rbs []runtime.Rollback
	// stepIdx is the step running now (1-based), for notices.
	stepIdx int
	// stopNoticed holds the last evaluation error noticed per stop
	// condition, so a condition failing every poll is noted once.
	stopNoticed map[string]string
	// refusal is what refused the run or lost its guard: its kind is the
	// run's.
	refusal error
}

// update runs f under the journal lock.
func (r *runJournal) update(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// Notice records a warning (a repeated signal) in the journal of the run
// in progress (or the last one) and the live log. It is safe to call from
// any goroutine during Run.
func (r *Runner) Notice(msg string) {
	jr := r.live.Load()
	if jr == nil {
		jr = &runJournal{reporters: r.Reporters}
		if r.Deps != nil {
			jr.clock = r.Deps.Clock
		}
	}
	jr.notice(msg)
}

func (r *runJournal) notice(msg string) {
	r.redact(&msg)
	r.mu.Lock()
	if j := r.journal; j != nil {
		j.Notices = append(j.Notices, msg)
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventNotice, Message: msg})
}

// stepNotice is the run context's notice (a wait-for seeing a new state):
// logged under the step running, if any, and emitted.
func (r *runJournal) stepNotice(msg string) {
	r.mu.Lock()
	idx := r.stepIdx
	if idx > 0 {
		s := &r.journal.Steps[idx-1]
		if len(s.Log) < 200 {
			s.Log = append(s.Log, r.rc.Now().UTC().Format("15:04:05.000Z")+" "+msg)
		}
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventNotice, Message: msg, StepIndex: idx})
}

// emit delivers ev to every reporter, one event at a time, once what it
// records is redacted: its step, check or rollback (which point into the
// journal) and the journal's verdict.
func (r *runJournal) emit(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Journal = r.journal
	if ev.Time.IsZero() {
		ev.Time = cmp.Or(r.clock, clock.Clock(clock.Real{})).Now()
	}
	if ev.StepIndex > 0 && ev.Step == nil && ev.Journal != nil && ev.StepIndex <= len(ev.Journal.Steps) {
		ev.Step = &ev.Journal.Steps[ev.StepIndex-1]
	}
	if s := ev.Step; s != nil {
		r.redact(&s.Description, &s.Reason, &s.Detail, &s.Error)
	}
	if c := ev.Check; c != nil {
		r.redact(&c.Description, &c.Detail, &c.Error)
	}
	if rb := ev.Rollback; rb != nil {
		r.redact(&rb.Description, &rb.Detail, &rb.Error)
	}
	if j := ev.Journal; j != nil {
		r.redact(&j.Reason)
		if g := j.Guard; g != nil {
			r.redact(&g.Cause, &g.Fix)
		}
		if st := j.Stop; st != nil {
			r.redact(&st.Detail)
			for i := range st.Alarms {
				r.redact(&st.Alarms[i].Reason)
			}
		}
	}
	for _, rep := range r.reporters {
		rep.Report(ev)
	}
}

// redact hides the run's secret values in texts, in place: the one place
// what the run records is redacted, as it is recorded (the records events
// carry, before any reporter sees them; gauge samples, stop evaluations and
// notices).
func (r *runJournal) redact(texts ...*string) {
	for _, t := range texts {
		if r.rc != nil {
			*t = r.rc.Redact(*t)
		}
	}
}
