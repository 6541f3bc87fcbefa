package drill

import (
	"fmt"
	"time"
)

// JournalVersion is the version of the journal format this koshactl writes.
// Version 2 added GaugeSamples, StopEvaluations and Audit; a version 1
// journal reads as one without them. A journal of a later version is refused
// by [ReadJournal]: its fields could mean what this koshactl does not know.
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
}

// CheckVersion refuses a journal written by a later koshactl, whose
// fields could mean what this one does not know. Versions 0 and 1 read
// as journals without the version 2 fields.
func (j *Journal) CheckVersion() error {
	if j.Version > JournalVersion {
		return fmt.Errorf("journal version %d is newer than this koshactl reads (%d): use a newer koshactl", j.Version, JournalVersion)
	}
	return nil
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
