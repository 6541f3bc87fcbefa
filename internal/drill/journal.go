package drill

import (
	"fmt"
	"time"
)

// Outcomes of a run (Journal.Outcome).
const (
	// OutcomeRunning: the run has not finished (a journal written mid-run).
	OutcomeRunning = "running"
	// OutcomePassed: the hypothesis held before and after, and every step passed.
	OutcomePassed = "passed"
	// OutcomeFailed: the hypothesis did not hold, or a step failed.
	OutcomeFailed = "failed"
	// OutcomeStopped: a stop condition held and ended the steps.
	OutcomeStopped = "stopped"
	// OutcomeTimedOut: the drill's timeout ended the steps.
	OutcomeTimedOut = "timed_out"
	// OutcomeInterrupted: the run was canceled (SIGINT, SIGTERM).
	OutcomeInterrupted = "interrupted"
	// OutcomeInvalid: the drill could not start (a variable could not be
	// resolved); nothing was done.
	OutcomeInvalid = "invalid"
	// OutcomeRefused: the preflight found a guard (a stop condition, a
	// hypothesis check) that cannot be evaluated; nothing was done: no
	// lever, no rollback, no audit record (Journal.Guard says which).
	OutcomeRefused = "refused"
	// OutcomeGuardLost: a guard stayed unevaluable past the drill's
	// guard_grace; the steps stopped and everything was rolled back
	// (Journal.Guard says which).
	OutcomeGuardLost = "guard_lost"
	// OutcomeKilled: the run's process died before it finished (SIGKILL, a
	// lost machine); `drill recover` found it so.
	OutcomeKilled = "killed"
)

// Phases of a run (Event.Phase, CheckRecord.Phase).
const (
	PhasePreflight = "preflight"
	PhaseBefore    = "hypothesis before"
	PhaseSteps     = "steps"
	PhaseRollback  = "rollback"
	PhaseAfter     = "hypothesis after"
)

// Step and rollback statuses.
const (
	StatusPending     = "pending"
	StatusRunning     = "running"
	StatusPassed      = "passed"
	StatusFailed      = "failed"
	StatusSkipped     = "skipped"
	StatusInterrupted = "interrupted"
	StatusTimedOut    = "timed_out"
	StatusStopped     = "stopped"
	// StatusGuardLost: the step was ended by a lost guard.
	StatusGuardLost = "guard_lost"
	// StatusOK: a rollback restored its subject (its change and the change's
	// audit record are one write), or found nothing of the drill's to undo.
	StatusOK = "ok"
	// StatusAbandoned: a rollback was not attempted because the operator
	// abandoned the rollback phase.
	StatusAbandoned = "abandoned"
)

// Journal is the record of one run: every check, step and rollback with
// timings. It is written as JSON (--journal), rendered as JUnit XML and as
// the live log. Secrets never appear in it: a chaos header is recorded by
// its jti, fields and expiry only.
type Journal struct {
	Kind    string    `json:"kind"`
	Version int       `json:"version"`
	Drill   DrillInfo `json:"drill"`
	RunID   string    `json:"run_id"`
	Context string    `json:"context"`
	Store   string    `json:"store,omitempty"`
	Gauges  string    `json:"gauges,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	// Request is the approved drill.run change request the run went on
	// with, when the table's policy needed approvals for its levers.
	Request string `json:"request,omitempty"`

	StartedAt       time.Time  `json:"started_at"`
	Deadline        time.Time  `json:"deadline"`
	EndedAt         *time.Time `json:"ended_at"`
	DurationSeconds float64    `json:"duration_seconds"`
	TimeoutSeconds  float64    `json:"timeout_seconds"`

	// Outcome is one of the Outcome constants; Reason says why in a line.
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// RollbacksOK is true when every rollback restored its lever, or there
	// was none.
	RollbacksOK bool `json:"rollbacks_ok"`
	ExitCode    int  `json:"exit_code"`

	// Preflight holds the one evaluation of every stop condition and
	// hypothesis check before anything was done.
	Preflight  []CheckRecord `json:"preflight,omitempty"`
	Hypothesis Hypothesis    `json:"hypothesis"`
	Steps      []StepRecord  `json:"steps"`
	Stop       *StopRecord   `json:"stop,omitempty"`
	// Guard says which guard refused the run (preflight) or was lost.
	Guard     *GuardRecord     `json:"guard,omitempty"`
	Rollbacks []RollbackRecord `json:"rollbacks"`
	// Notices are warnings the run produced (a stop condition that could
	// not be evaluated, a repeated signal).
	Notices []string `json:"notices,omitempty"`
	// Runner is the process that ran the drill (with --journal).
	Runner *RunnerRecord `json:"runner,omitempty"`
	// Recoveries are the `drill recover` runs that finished its rollbacks.
	Recoveries []RecoveryRecord `json:"recoveries,omitempty"`

	// GaugeSamples are the breaker_state reads the run's conditions made
	// (version 2).
	GaugeSamples []GaugeSample `json:"gauge_samples,omitempty"`
	// StopEvaluations are the stop conditions' evaluations (version 2).
	StopEvaluations []StopEvaluation `json:"stop_evaluations,omitempty"`
	// Audit names the audit records of every change the run made (version 2).
	Audit []AuditRef `json:"audit,omitempty"`
}

// DrillInfo identifies the drill that ran.
type DrillInfo struct {
	Name        string `json:"name"`
	File        string `json:"file"`
	Description string `json:"description,omitempty"`
}

// Hypothesis holds the steady-state checks before and after.
type Hypothesis struct {
	Before []CheckRecord `json:"before"`
	After  []CheckRecord `json:"after"`
	// AfterSkipped says why the checks after the rollbacks did not run.
	AfterSkipped string `json:"after_skipped,omitempty"`
}

// CheckRecord is one evaluation of a hypothesis check, or of a guard at
// the preflight.
type CheckRecord struct {
	Phase string `json:"phase"`
	// Role is what a preflight record evaluated: RoleStopCondition or
	// RoleHypothesis (empty in other phases, and in journals before it).
	Role        string `json:"role,omitempty"`
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	OK          bool   `json:"ok"`
	// Detail is what was observed last.
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
	// Checks counts evaluations (more than one with within).
	Checks          int        `json:"checks"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at"`
	DurationSeconds float64    `json:"duration_seconds"`
}

// Label names what a record evaluated as a reader needs it: a preflight
// record by its role and quoted name (`stop condition "core-api's breaker
// opened"`), so a guard that can be evaluated never reads as the event it
// guards against; any other by its name.
func (c CheckRecord) Label() string {
	if c.Phase != PhasePreflight {
		return c.Name
	}
	role := c.Role
	if role == "" {
		role = "guard"
	}
	return fmt.Sprintf("%s %q", role, c.Name)
}

// StepRecord is one step.
type StepRecord struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
	// Status is pending, running, passed, failed, skipped, interrupted,
	// timed_out, stopped or guard_lost.
	Status          string     `json:"status"`
	StartedAt       *time.Time `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at"`
	DurationSeconds float64    `json:"duration_seconds"`
	TimeoutSeconds  float64    `json:"timeout_seconds"`
	// Reason is why the step pulled its lever: its reason field as the
	// change's audit record has it (after "drill NAME run ID: "), or
	// "step ID" when the file gives none; empty for a step that moves no
	// lever.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
	// Outputs are the step's outputs; secrets read "[secret]".
	Outputs map[string]string `json:"outputs,omitempty"`
	// Rollbacks are the ids of the rollbacks this step registered.
	Rollbacks []string `json:"rollbacks,omitempty"`
	// Fleet is what the fleet's gauges confirmed of a breaker step with
	// wait: true, confirmed or not (version 2).
	Fleet *FleetRecord `json:"fleet,omitempty"`
	// Log holds progress notices (a wait-for's changing observations).
	Log []string `json:"log,omitempty"`
}

// StopRecord says which stop condition ended the run.
type StopRecord struct {
	Condition string    `json:"condition"`
	Detail    string    `json:"detail"`
	At        time.Time `json:"at"`
	// Alarms are the CloudWatch alarms that fired, when an alarm condition
	// stopped the run: name, state, state reason and since when.
	Alarms []Alarm `json:"alarms,omitempty"`
}

// Alarm is a CloudWatch alarm as a journal records it (the fields of
// metrics.Alarm, which converts to it).
type Alarm struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Since is when the alarm went into State.
	Since     time.Time `json:"since"`
	Composite bool      `json:"composite,omitempty"`
}

// Phases of a [GuardRecord].
const (
	GuardPreflight = "preflight"
	GuardDuringRun = "run"
)

// GuardRecord is a guard that could not be evaluated: at preflight (the
// run was refused) or past its grace during the run (the guard was lost).
type GuardRecord struct {
	// Phase is preflight or run.
	Phase string `json:"phase"`
	// Role is "stop condition", "hypothesis check" or "wait-for step";
	// Condition its name (a wait-for: the step's id).
	Role      string `json:"role"`
	Condition string `json:"condition"`
	// Cause is the last evaluation error; Fix how to make it evaluable.
	Cause string `json:"cause"`
	Fix   string `json:"fix,omitempty"`
	// Polls are the failed evaluations in a row, since Since (a lost guard).
	Polls int        `json:"polls,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	// GraceSeconds and GracePolls are the grace it was allowed.
	GracePolls   int       `json:"grace_polls,omitempty"`
	GraceSeconds float64   `json:"grace_seconds,omitempty"`
	At           time.Time `json:"at"`
}

// RollbackRecord is one rollback, registered before its step acted.
type RollbackRecord struct {
	ID string `json:"id"`
	// Step is the id of the step that registered it, or "drill" for the
	// drill's own rollback list.
	Step         string    `json:"step"`
	Subject      string    `json:"subject"`
	Description  string    `json:"description"`
	Explicit     bool      `json:"explicit"`
	RegisteredAt time.Time `json:"registered_at"`
	// Status is pending, running, ok, failed or abandoned.
	Status          string     `json:"status"`
	Attempts        int        `json:"attempts"`
	StartedAt       *time.Time `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at"`
	DurationSeconds float64    `json:"duration_seconds"`
	Detail          string     `json:"detail,omitempty"`
	Error           string     `json:"error,omitempty"`
	// ExpiresAt is when the lever lapses on its own, if it does.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Lever is what `drill recover` needs to run this rollback without
	// the run's process.
	Lever *LeverRecord `json:"lever,omitempty"`
	// RecoveredAt is set when `drill recover` ran this rollback.
	RecoveredAt *time.Time `json:"recovered_at,omitempty"`
}

// RunnerRecord identifies the process running the drill (and, in the
// journal's lock file, the process holding the lock). The lock (JOURNAL.lock,
// held with flock while the run is alive) is what `drill recover` checks
// first; the pid, with the process's start time, tells it a live run from a
// stale lock, and says which.
type RunnerRecord struct {
	PID  int    `json:"pid"`
	Host string `json:"host,omitempty"`
	Lock string `json:"lock,omitempty"`
	// Command is what the process runs ("drill run", "drill recover").
	Command string `json:"command,omitempty"`
	// StartedAt is when the process started.
	StartedAt time.Time `json:"started_at,omitzero"`
	// ProcStart tells this process from a later one given the same pid:
	// on Linux the boot id and the start time in clock ticks of
	// /proc/PID/stat ("BOOT_ID/TICKS"); empty elsewhere (the pid alone is
	// checked there).
	ProcStart string `json:"proc_start,omitempty"`
}

// RecoveryRecord is one `drill recover` of the run.
type RecoveryRecord struct {
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	// Rollbacks are the ids of the rollbacks it ran.
	Rollbacks []string `json:"rollbacks"`
	// OK is true when each of them succeeded.
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// TimePtr returns t in UTC, as a journal field holds it.
func TimePtr(t time.Time) *time.Time { t = t.UTC(); return &t }

// Seconds returns d in seconds, to the millisecond, as the journal holds
// durations.
func Seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// Lever kinds of a [LeverRecord].
const (
	LeverOverride = "override"
	LeverBucket   = "bucket"
	LeverChaos    = "chaos"
	LeverExplicit = "explicit"
)

// LeverRecord is what a rollback needs to run without the process that
// registered it: which lever, its state before the drill, and what the
// drill last wrote. The journal carries one per rollback, so `drill
// recover` can finish the rollbacks of a run that died.
type LeverRecord struct {
	// Kind is override, bucket, chaos or explicit (a rollback step of the
	// drill file, which recover does not run).
	Kind       string `json:"kind"`
	Dependency string `json:"dependency,omitempty"`
	Client     string `json:"client,omitempty"`
	// Inverse says what the rollback does: clear (the drill's override),
	// restore-override (put back the one the drill replaced),
	// restore-level (the bucket's level before, refilled since), withdraw
	// (a chaos header), run-step (an explicit rollback).
	Inverse string `json:"inverse"`
	// BeforeOverride is the override someone else held before the drill.
	BeforeOverride *OverrideState `json:"before_override,omitempty"`
	// BeforeBucket is the bucket before the drill's first change.
	BeforeBucket *BucketState `json:"before_bucket,omitempty"`
	// WriteID is the token of the drill's last change to the override
	// (the write_id its item and audit record carry); empty when the drill
	// has not changed it yet. It is a hint: recover acts only on the
	// override's own write_id and the run's audit record of that change.
	WriteID string `json:"write_id,omitempty"`
	// JTI names a chaos header.
	JTI string `json:"jti,omitempty"`
}

// OverrideState is an override as the journal records it.
type OverrideState struct {
	State     string    `json:"state"`
	Reason    string    `json:"reason"`
	Actor     string    `json:"actor"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Version   int64     `json:"version"`
}

// BucketState is a bucket as the journal records it.
type BucketState struct {
	Exists      bool    `json:"exists"`
	Tokens      float64 `json:"tokens"`
	UpdatedAtMs int64   `json:"updated_at_ms"`
}

// DisplayPrecision rounds a measured duration to what a report shows: about
// three significant digits (12.3ms, 1.23s, 12.3s); [human.Duration] writes it.
func DisplayPrecision(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d
}

// JournalVersion is the version of the journal format this koshactl writes.
// Version 2 added GaugeSamples, StopEvaluations and Audit; a version 1
// journal reads as one without them. A journal of a later version is refused
// by [StreamJournal]: its fields could mean what this koshactl does not know.
const JournalVersion = 2

// GaugeSample is one read of a dependency's breaker_state gauges during a
// run: what a breaker condition (a hypothesis check, a wait_for, an
// assert, a stop condition) observed when it polled.
type GaugeSample struct {
	At         time.Time `json:"at"`
	Dependency string    `json:"dependency"`
	// Instances are the reporting instances and their states (closed,
	// half_open, open, forced_open); empty when none reported.
	Instances []InstanceSample `json:"instances"`
	// Error says why the read failed; Instances is then empty.
	Error string `json:"error,omitempty"`
}

// InstanceSample is one instance's state in a [GaugeSample].
type InstanceSample struct {
	Instance string `json:"instance"`
	State    string `json:"state"`
}

// StopEvaluation is one evaluation of a stop condition while the steps ran.
type StopEvaluation struct {
	At        time.Time `json:"at"`
	Condition string    `json:"condition"`
	Holds     bool      `json:"holds"`
	Detail    string    `json:"detail,omitempty"`
	// Error says why the condition could not be evaluated.
	Error string `json:"error,omitempty"`
}

// AuditRef names one audit record the run (or a recovery) wrote.
type AuditRef struct {
	ID      string    `json:"id"`
	At      time.Time `json:"at"`
	Action  string    `json:"action"`
	Subject string    `json:"subject"`
	// Impact is what the record says its force or clear did to the
	// platform's tools (absent: it says nothing).
	Impact *LeverImpact `json:"impact,omitempty"`
}

// LeverImpact is a force's or a clear's impact as its audit record keeps
// it (the record's impact attribute, docs/contracts/audit-record.md): the
// tools its override changes and their call rates when it was written.
type LeverImpact struct {
	Tools []ToolRate `json:"tools"`
	// RatesSource is where the rates were read ("": none named);
	// RatesError why they could not be.
	RatesSource string `json:"rates_source,omitempty"`
	RatesError  string `json:"rates_error,omitempty"`
}

// ToolRate is one tool's behaviour under a lever, and its call rate then.
type ToolRate struct {
	Tool      string `json:"tool"`
	Behaviour string `json:"behaviour"`
	// CallsPerMinute is absent when no rate was read.
	CallsPerMinute *float64 `json:"calls_per_minute,omitempty"`
}

// FleetRecord is what the fleet's gauges confirmed of a breaker step with
// wait: true (the journal's StepRecord.Fleet): the change awaited, whether
// it was confirmed, after how long, within which bound, and the last
// summary (the instances and stragglers).
type FleetRecord struct {
	Dependency     string  `json:"dependency"`
	Goal           string  `json:"goal"`
	Confirmed      bool    `json:"confirmed"`
	Summary        string  `json:"summary"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}
