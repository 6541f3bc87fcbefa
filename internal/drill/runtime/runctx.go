package runtime

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Outputs are the values a step produced, referenced by later steps as
// ${steps.ID.NAME}. Secret outputs resolve like others but never appear in
// reports.
type Outputs struct {
	// Detail is one line about what the step saw, for the live log and
	// the journal ("200 in 35ms").
	Detail string
	// Fleet is what the fleet's gauges confirmed (a breaker step with
	// wait: true).
	Fleet *drill.FleetRecord

	names    []string
	values   map[string]string
	secret   map[string]bool
	families map[string]func(path string) (string, error)
}

// NewOutputs returns an empty set of outputs.
func NewOutputs() *Outputs {
	return &Outputs{values: map[string]string{}, secret: map[string]bool{}, families: map[string]func(string) (string, error){}}
}

// Set records an output.
func (o *Outputs) Set(name, value string) *Outputs {
	if _, ok := o.values[name]; !ok {
		o.names = append(o.names, name)
	}
	o.values[name] = value
	return o
}

// SetSecret records an output that must never be reported.
func (o *Outputs) SetSecret(name, value string) *Outputs {
	o.Set(name, value)
	o.secret[name] = true
	return o
}

// SetFamily answers every output named prefix+path with f(path); prefix
// ends in a dot ("json.").
func (o *Outputs) SetFamily(prefix string, f func(path string) (string, error)) *Outputs {
	o.families[prefix] = f
	return o
}

// Lookup returns output name.
func (o *Outputs) Lookup(name string) (value string, secret bool, err error) {
	if v, ok := o.values[name]; ok {
		return v, o.secret[name], nil
	}
	for prefix, f := range o.families {
		if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
			v, err := f(rest)
			return v, false, err
		}
	}
	return "", false, fmt.Errorf("no output %q", name)
}

// Public returns the outputs that may be reported, secrets replaced by
// "[secret]", in the order they were set.
func (o *Outputs) Public() map[string]string {
	if o == nil || len(o.names) == 0 {
		return nil
	}
	out := make(map[string]string, len(o.names))
	for _, n := range o.names {
		if o.secret[n] {
			out[n] = "[secret]"
		} else {
			out[n] = o.values[n]
		}
	}
	return out
}

// RunContext is what steps, conditions and rollbacks see of a run: the
// drill, its dependencies, the resolved variables, earlier steps' outputs and
// the levers moved so far. It is safe for concurrent use (stop conditions
// are evaluated alongside steps).
type RunContext struct {
	// Drill is the drill being run.
	Drill *drill.Drill
	// RunID identifies this run in override reasons and audit records.
	RunID string
	// Deps are what steps act on.
	Deps *Deps

	clock    clock.Clock
	started  time.Time
	deadline time.Time
	notify   func(string)

	mu        sync.Mutex
	outputs   map[string]*Outputs
	vars      map[string]string
	varSecret map[string]bool
	levers    map[string]*Lever
	secrets   []string
	stepID    string
	// reasons are why each step pulled its lever (its reason field).
	reasons map[string]string
	// actor, when set, is the actor of the run being recovered (its
	// overrides carry it); recoveredBy is who recovers it.
	actor, recoveredBy string
}

// NewRunContext starts the context of a run of d: its clock is svc.Clock
// (the real clock when nil), it starts now and ends d.Timeout later.
// notify, when set, receives the run's notices (see [RunContext.Notify]).
func NewRunContext(d *drill.Drill, runID string, svc *Deps, notify func(string)) *RunContext {
	clk := cmp.Or(svc.Clock, clock.Clock(clock.Real{}))
	now := clk.Now()
	return &RunContext{Drill: d, RunID: runID, Deps: svc, clock: clk, started: now, deadline: now.Add(d.Timeout),
		notify: notify, outputs: map[string]*Outputs{}, vars: map[string]string{}, varSecret: map[string]bool{},
		levers: map[string]*Lever{}, reasons: map[string]string{}}
}

// NewRecoveryContext is the context in which `drill recover` undoes what
// the run j journals: it started and ends when j says, its writes carry
// j's actor, and its reasons say who recovers it (svc.Actor).
func NewRecoveryContext(d *drill.Drill, j *drill.Journal, svc *Deps) *RunContext {
	rc := NewRunContext(d, j.RunID, svc, nil)
	rc.started, rc.deadline = j.StartedAt, j.Deadline
	rc.actor, rc.recoveredBy = j.Actor, svc.Actor
	return rc
}

// Clock returns the run's clock.
func (rc *RunContext) Clock() clock.Clock { return rc.clock }

// Started returns when the run started.
func (rc *RunContext) Started() time.Time { return rc.started }

// Now returns the run clock's time.
func (rc *RunContext) Now() time.Time { return rc.clock.Now() }

// After waits d on the run's clock.
func (rc *RunContext) After(d time.Duration) <-chan time.Time { return clock.After(rc.clock, d) }

// Deadline returns when the drill's timeout ends; every lever it pulls
// expires by then.
func (rc *RunContext) Deadline() time.Time { return rc.deadline }

// Remaining returns the time left before the deadline (0 when past it).
func (rc *RunContext) Remaining() time.Duration { return max(rc.deadline.Sub(rc.Now()), 0) }

// Notify reports progress (a wait-for seeing a new state) to the live log.
func (rc *RunContext) Notify(format string, args ...any) {
	if rc.notify != nil {
		rc.notify(rc.Redact(fmt.Sprintf(format, args...)))
	}
}

// Reason returns the text override items and audit records carry for this
// run: "drill NAME run ID: detail" (for people: which override is the
// drill's is told by its write_id, never by its reason). detail can hold
// step outputs (an HTTP body, a stored value): anything unsafe in it is kept
// as a visible escape and the whole is cut to [audit.MaxReasonLen]
// characters, so the result always passes [audit.ValidateReason].
func (rc *RunContext) Reason(detail string) string {
	r := fmt.Sprintf("drill %s run %s", rc.Drill.Name, rc.RunID)
	if rc.recoveredBy != "" {
		detail = "recovered by " + rc.recoveredBy + ": " + detail
	}
	if detail != "" {
		r += ": " + detail
	}
	return audit.TruncateReason(textsafe.Line(r))
}

// Actor is the actor whose writes are this run's.
func (rc *RunContext) Actor() string {
	if rc.actor != "" {
		return rc.actor
	}
	return rc.Deps.Actor
}

// Audit is where the run's steps and rollbacks record what they change:
// the Deps' audit log, each record stamped with the run's id (the record's
// run_id attribute), which is what `drill recover` trusts rather than the
// journal. Nil when the Deps have no audit log.
func (rc *RunContext) Audit() audit.Appender { return audit.WithRunID(rc.Deps.Audit, rc.RunID) }

// Levers is the lever service as the run moves levers: its records carry
// the run's id (the run announces itself, at its start and end; its
// changes are made quiet).
func (rc *RunContext) Levers() *lever.Service {
	return rc.Deps.Levers.WithLog(rc.Audit())
}

// Recorder hears of the audit records of a change once the change has
// committed (a lever's records are staged into its transaction, so only
// its outcome says they exist). A run's audit log implements it to name
// them in its journal.
type Recorder interface {
	Recorded(recs ...audit.Record)
}

// Recorded says that recs were written, with the change that committed:
// the run's journal names them. Call it only for a change that landed.
func (rc *RunContext) Recorded(recs ...audit.Record) {
	if r, ok := rc.Deps.Audit.(Recorder); ok {
		r.Recorded(recs...)
	}
}

// Lookup implements [Resolver] for templates.
func (rc *RunContext) Lookup(ref drill.Ref) (string, bool, error) {
	switch ref.Namespace {
	case drill.NSVars:
		rc.mu.Lock()
		v, ok := rc.vars[ref.Name]
		sec := rc.varSecret[ref.Name]
		rc.mu.Unlock()
		if !ok {
			return "", false, fmt.Errorf("variable %q is not set", ref.Name)
		}
		return v, sec, nil
	case drill.NSEnv:
		if rc.Deps.LookupEnv != nil {
			if v, ok := rc.Deps.LookupEnv(ref.Name); ok {
				return v, false, nil
			}
		}
		if ref.HasDefault {
			return ref.Default, false, nil
		}
		return "", false, fmt.Errorf("environment variable %s is not set (give a default with ${env.%s:-value})", ref.Name, ref.Name)
	case drill.NSDrill:
		switch ref.Name {
		case "name":
			return rc.Drill.Name, false, nil
		case "run_id":
			return rc.RunID, false, nil
		case "context":
			return rc.Deps.ContextName, false, nil
		case "deadline":
			return rc.deadline.UTC().Format(time.RFC3339), false, nil
		}
	case drill.NSSteps:
		rc.mu.Lock()
		o, ok := rc.outputs[ref.Name]
		rc.mu.Unlock()
		if !ok {
			return "", false, fmt.Errorf("step %q has no outputs: it did not run, or failed", ref.Name)
		}
		v, sec, err := o.Lookup(ref.Output)
		if err != nil {
			return "", false, fmt.Errorf("step %q: %w", ref.Name, err)
		}
		return v, sec, nil
	}
	return "", false, fmt.Errorf("unknown reference %s", ref.Text)
}

// ResolveVars expands the drill's variables in order, each able to use the
// ones before it, and sets them for the run.
func (rc *RunContext) ResolveVars() error {
	for _, v := range rc.Drill.Vars {
		val, err := rc.Expand(v.Value)
		if err != nil {
			return fmt.Errorf("variable %s: %v", v.Name, err)
		}
		rc.SetVar(v.Name, val, v.Secret)
	}
	return nil
}

// Expand resolves a template. A secret value in the result is remembered,
// so [RunContext.Redact] hides it wherever it is reported.
func (rc *RunContext) Expand(t drill.Template) (string, error) {
	s, _, err := t.Expand(rc) // secret values were registered when they were produced
	return s, err
}

// Describe expands t for a description, falling back to the template text
// when a reference cannot be resolved yet.
func (rc *RunContext) Describe(t drill.Template) string {
	s, err := rc.Expand(t)
	if err != nil {
		return t.String()
	}
	return rc.Redact(s)
}

// minSecretLen keeps very short secret values (which would redact common
// substrings everywhere) out of redaction.
const minSecretLen = 6

// AddSecret remembers a value that must never be reported.
func (rc *RunContext) AddSecret(s string) {
	if len(s) < minSecretLen {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !slices.Contains(rc.secrets, s) {
		rc.secrets = append(rc.secrets, s)
		// Longest first, so a secret containing another is hidden whole.
		slices.SortFunc(rc.secrets, func(a, b string) int { return len(b) - len(a) })
	}
}

// Redact replaces every secret value in s with [redacted].
func (rc *RunContext) Redact(s string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, sec := range rc.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

// SetVar sets variable name for the rest of the run; a secret one is
// redacted from everything reported.
func (rc *RunContext) SetVar(name, value string, secret bool) {
	rc.mu.Lock()
	rc.vars[name], rc.varSecret[name] = value, secret
	rc.mu.Unlock()
	if secret {
		rc.AddSecret(value)
	}
}

// SetOutputs records what step id produced; its secret outputs are
// redacted from everything reported.
func (rc *RunContext) SetOutputs(id string, o *Outputs) {
	if o == nil {
		o = NewOutputs()
	}
	rc.mu.Lock()
	rc.outputs[id] = o
	rc.mu.Unlock()
	for n := range o.secret {
		rc.AddSecret(o.values[n])
	}
}

// Lever is one thing a drill moved (an override, a bucket, a chaos
// header). A lever gets one rollback, registered before the first step that
// moves it, restoring it to its state before the drill; later steps that
// move it again register nothing new.
type Lever struct {
	// Subject names it: breaker#openai, rl#client, chaos#<step>.
	Subject string
	// Before is the lever's state before the drill (kind-specific).
	Before any

	mu sync.Mutex
	// written is the last state the drill wrote (kind-specific); moved
	// says the drill wrote it at all (or may have: an outcome unknown).
	written   any
	moved     bool
	expiresAt time.Time
}

// Written returns the last state the drill wrote.
func (l *Lever) Written() any { l.mu.Lock(); defer l.mu.Unlock(); return l.written }

// Moved reports whether the drill changed the lever (or may have).
func (l *Lever) Moved() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.moved }

// SetWritten records what the drill wrote (or may have written) and when
// it lapses on its own.
func (l *Lever) SetWritten(v any, expiresAt time.Time) {
	l.mu.Lock()
	l.written, l.moved, l.expiresAt = v, true, expiresAt
	l.mu.Unlock()
}

// ExpiresAt returns when the lever lapses on its own (zero: not moved
// yet, or it does not lapse).
func (l *Lever) ExpiresAt() time.Time { l.mu.Lock(); defer l.mu.Unlock(); return l.expiresAt }

// Lever returns the lever for subject if the run moved it already.
func (rc *RunContext) Lever(subject string) (*Lever, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	l, ok := rc.levers[subject]
	return l, ok
}

// NewLever records a lever about to be moved for the first time.
func (rc *RunContext) NewLever(subject string, before any) *Lever {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	l := &Lever{Subject: subject, Before: before}
	rc.levers[subject] = l
	return l
}

// SetCurrentStep records the id of the step (or rollback) starting now.
func (rc *RunContext) SetCurrentStep(id string) {
	rc.mu.Lock()
	rc.stepID = id
	rc.mu.Unlock()
}

// CurrentStep returns the id of the step (or rollback) running now.
func (rc *RunContext) CurrentStep() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.stepID
}

// SetStepReason records why the step running now pulls its lever: the
// reason its change is recorded with, which the journal and the game-day
// report show beside the step.
func (rc *RunContext) SetStepReason(why string) {
	rc.mu.Lock()
	rc.reasons[rc.stepID] = why
	rc.mu.Unlock()
}

// StepReason is the reason step id recorded; empty when it pulled no lever.
func (rc *RunContext) StepReason(id string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.reasons[id]
}

// Withdraw removes an output, so nothing later (a rollback step) can use it.
func (rc *RunContext) Withdraw(stepID, name string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if o, ok := rc.outputs[stepID]; ok {
		delete(o.values, name)
	}
}

// Environ is the environment a command of the run gets: the base
// environment (Deps.Environ), the drill's identity (DRILL_NAME,
// DRILL_RUN_ID, DRILL_CONTEXT, DRILL_DEADLINE), every variable
// (DRILL_VAR_NAME) and every output of earlier steps
// (DRILL_STEP_ID_OUTPUT). A variable or output holding NUL, which the
// environment cannot carry, is left out with a notice.
func (rc *RunContext) Environ() []string {
	env := append([]string(nil), rc.Deps.Environ...)
	env = append(env, "DRILL_NAME="+rc.Drill.Name, "DRILL_RUN_ID="+rc.RunID, "DRILL_CONTEXT="+rc.Deps.ContextName,
		"DRILL_DEADLINE="+rc.Deadline().UTC().Format(time.RFC3339))
	add := func(name, value string) {
		if drill.EnvCarries(value) {
			env = append(env, name+"="+value)
		} else {
			rc.Notify("%s is not set for the command: its value holds a NUL byte, which an environment variable cannot carry", name)
		}
	}
	rc.mu.Lock() // not held by add: a notice is redacted under it
	vars, outs := maps.Clone(rc.vars), maps.Clone(rc.outputs)
	rc.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		add(drill.EnvName("DRILL_VAR", name), vars[name])
	}
	for _, id := range slices.Sorted(maps.Keys(outs)) {
		o := outs[id]
		for _, name := range o.names {
			if v, ok := o.values[name]; ok {
				add(drill.EnvName("DRILL_STEP", id, name), v)
			}
		}
	}
	return env
}
