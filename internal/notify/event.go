package notify

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// Kind and Version identify the JSON payload (docs/contracts/notification.md).
const (
	Kind    = "KoshaNotification"
	Version = 1
)

// Sources of a notification: where the change was made.
const (
	SourceCLI       = "cli"
	SourceDashboard = "dashboard"
	SourceDrill     = "drill"
)

// Actions of drill notifications. A change's notification carries the
// action of its audit records (breaker.force-open, ratelimit.drain, ...).
const (
	ActionDrillStarted   = "drill.started"
	ActionDrillStopped   = "drill.stopped"
	ActionDrillFinished  = "drill.finished"
	ActionDrillRecovered = "drill.recovered"
)

// Lever is one thing a change moved.
type Lever struct {
	// Subject is the item moved: breaker#openai, rl#client-7, chaos-key#...
	Subject string `json:"subject"`
	// Change says what happened to it, in a few words ("forced open").
	Change string `json:"change"`
	// ExpiresAt is when the lever lapses on its own; nil when it does not
	// (a cleared override, a reset bucket, a rotated key).
	ExpiresAt *time.Time `json:"expires_at"`
	// AuditID is the audit record of the change ("" when none was written).
	AuditID string `json:"audit_id,omitempty"`
}

// Drill names the drill run a notification is about.
type Drill struct {
	Name  string `json:"name"`
	RunID string `json:"run_id"`
}

// Event is one notification: the JSON payload of
// docs/contracts/notification.md. Callers fill Action, Actor, Reason,
// Levers (and Outcome, Detail, Drill for drills); the [Dispatcher] fills
// the rest.
type Event struct {
	Kind    string    `json:"kind"`
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Source  string    `json:"source"`
	Context string    `json:"context"`
	Actor   string    `json:"actor"`
	Reason  string    `json:"reason,omitempty"`
	// Outcome is a drill's outcome (passed, failed, stopped, ...); empty
	// for a command's change.
	Outcome string `json:"outcome,omitempty"`
	// Detail is one line more: the stop condition that held, the
	// rollbacks' result.
	Detail string `json:"detail,omitempty"`
	// Impact says, one line each, what the change does to the platform's
	// tools (a change request's forces: the degradation matrix, with the
	// call rates read when it was requested).
	Impact []string `json:"impact,omitempty"`
	Drill  *Drill   `json:"drill,omitempty"`
	Levers []Lever  `json:"levers"`
	// AuditIDs are every audit record the notification is about: the
	// levers' and any other (a drill recovery's own record).
	AuditIDs []string `json:"audit_ids"`

	// reporter, when set, sent a notification about another's change
	// ([BypassedEvent]): it, not Actor, is the actor of the notification's
	// notify.failed record. Not in the payload.
	reporter string
}

// failureActor is the actor of ev's notify.failed record: who sent it.
func (ev Event) failureActor() string {
	if ev.reporter != "" {
		return ev.reporter
	}
	return ev.Actor
}

// complete fills what the dispatcher knows and normalizes the lists.
func (ev Event) complete(id string, now time.Time, contextName, source string) Event {
	ev.Kind, ev.Version = Kind, Version
	if ev.ID == "" {
		ev.ID = id
	}
	if ev.Time.IsZero() {
		ev.Time = now.UTC().Truncate(time.Millisecond)
	}
	if ev.Context == "" {
		ev.Context = contextName
	}
	if ev.Source == "" {
		ev.Source = source
	}
	if ev.Source == "" {
		ev.Source = SourceCLI
	}
	if ev.Levers == nil {
		ev.Levers = []Lever{}
	}
	ids := slices.Clone(ev.AuditIDs)
	for _, l := range ev.Levers {
		ids = append(ids, l.AuditID) // an empty one is left out below
	}
	ev.AuditIDs = []string{}
	for _, id := range ids {
		if id != "" && !slices.Contains(ev.AuditIDs, id) {
			ev.AuditIDs = append(ev.AuditIDs, id)
		}
	}
	return ev
}

func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strings.Repeat("0", 16)
	}
	return hex.EncodeToString(b[:])
}

// Time is t as a lever's expiry: nil for the zero time (it does not lapse).
func Time(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// KeyRotationLever is the lever of a chaos key rotation: kids only, never
// a key. signsFrom, when set, is when the new key starts signing.
func KeyRotationLever(subject, currentKID, previousKID, retiredKID string, signsFrom *time.Time, auditID string) Lever {
	change := "rotated: kid " + currentKID + " is current"
	if previousKID != "" {
		change += ", kid " + previousKID + " previous"
	}
	if retiredKID != "" {
		change += ", kid " + retiredKID + " retired"
	}
	if signsFrom != nil {
		change += ", new key signs from " + signsFrom.UTC().Format(time.RFC3339)
	}
	return Lever{Subject: subject, Change: change, AuditID: auditID}
}
