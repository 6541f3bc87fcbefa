package freeze

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
)

// States of a freeze item at an instant, as [View] names them.
const (
	StateFrozen  = "frozen"
	StateLifted  = "lifted"
	StateExpired = "expired"
)

// State names what the freeze is at now: frozen, lifted or expired.
func (f Freeze) State(now time.Time) string {
	switch {
	case f.FrozenAt(now):
		return StateFrozen
	case f.Lifted():
		return StateLifted
	}
	return StateExpired
}

// View is a freeze item as the control plane shows it (`freeze status -o
// json`, an MCP read tool): its attributes, its state at the time of the
// view, and the earliest issue time of a chaos header it lets through.
// Its strings come from the table: a surface renders them with textsafe.
type View struct {
	State      string     `json:"state"`
	Actor      string     `json:"actor"`
	Reason     string     `json:"reason"`
	Ref        string     `json:"ref,omitempty"`
	SetAt      *time.Time `json:"set_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LiftedAt   *time.Time `json:"lifted_at"`
	LiftedBy   string     `json:"lifted_by,omitempty"`
	LiftReason string     `json:"lift_reason,omitempty"`
	// ChaosNotBefore is the earliest issue time (iat) of a header honoured
	// once the freeze has ended; null while it has no end.
	ChaosNotBefore *time.Time `json:"chaos_not_before"`
	Version        int64      `json:"version"`
	WriteID        string     `json:"write_id,omitempty"`
	// Summary is [Freeze.Describe] at the view's time.
	Summary   string          `json:"summary"`
	Malformed []store.Problem `json:"malformed,omitempty"`
}

// View returns the freeze as shown at now.
func (f Freeze) View(now time.Time) View {
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		u := t.UTC()
		return &u
	}
	v := View{State: f.State(now), Actor: f.Actor, Reason: f.Reason, Ref: f.Ref, SetAt: at(f.SetAt), ExpiresAt: at(f.ExpiresAt),
		LiftedAt: at(f.LiftedAt), LiftedBy: f.LiftedBy, LiftReason: f.LiftReason, Version: f.Version, WriteID: f.WriteID,
		Summary: f.Describe(now), Malformed: f.Problems}
	if nb, ok := f.ChaosNotBefore(); ok {
		v.ChaosNotBefore = at(time.Unix(nb, 0))
	}
	return v
}
