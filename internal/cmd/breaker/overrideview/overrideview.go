// Package overrideview is how the breaker commands show an override: its
// stable JSON shape (docs/contracts/cli-output.md), its state label and its
// expiry for tables.
package overrideview

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/store"
)

// OverrideView is the stable JSON shape of an override.
type OverrideView struct {
	Dependency       string  `json:"dependency"`
	State            string  `json:"state"`
	Active           bool    `json:"active"`
	Reason           string  `json:"reason"`
	Actor            string  `json:"actor"`
	CreatedAt        *string `json:"created_at"`
	ExpiresAt        *string `json:"expires_at"`
	ExpiresInSeconds *int64  `json:"expires_in_seconds"`
	Version          int64   `json:"version"`
	// ManagedBy is the marker of the levers file and window the override
	// was applied for (koshactl apply); absent on every other override.
	ManagedBy string `json:"managed_by,omitempty"`
	// Approval is how the table's change policy let the write through
	// (who asked and who approved an approved force); absent on a table
	// without a policy.
	Approval *audit.Approval `json:"approval,omitempty"`
	// Malformed lists the stored item's attributes that do not follow the
	// contract (absent for a well-formed item). The fields above then hold
	// what could be read: a malformed time is null, a malformed version 0.
	Malformed []store.Problem `json:"malformed,omitempty"`
}

// View converts an override for output at now.
func View(o breaker.Override, now time.Time) OverrideView {
	v := OverrideView{
		Dependency: o.Dependency, State: o.State, Active: o.ActiveAt(now), Reason: o.Reason, Actor: o.Actor,
		CreatedAt: cmdutil.TimeOrNil(o.CreatedAt), ExpiresAt: cmdutil.TimeOrNil(o.ExpiresAt), Version: o.Version,
		ManagedBy: o.ManagedBy, Approval: o.Approval, Malformed: o.Problems,
	}
	if o.Expires() {
		s := int64(o.ExpiresAt.Sub(now).Seconds())
		s = max(s, 0)
		v.ExpiresInSeconds = &s
	}
	return v
}

// ViewPtr is View for an optional override.
func ViewPtr(o *breaker.Override, now time.Time) *OverrideView {
	if o == nil {
		return nil
	}
	v := View(*o, now)
	return &v
}

// StateLabel is the human label of an override's state at now; a malformed
// item says so.
func StateLabel(o breaker.Override, now time.Time) string {
	label := o.State + " (inactive)"
	switch {
	case o.ActiveAt(now):
		label = "forced_open"
	case o.State == breaker.OverrideStateForcedOpen:
		label = "expired"
	case o.HasProblem(breaker.AttrState):
		label = "inactive"
	}
	if o.Malformed() {
		label += " (malformed)"
	}
	return label
}

// Expiry renders when an override lapses, for tables.
func Expiry(o breaker.Override, now time.Time, tty bool) string {
	if o.HasProblem(breaker.AttrExpiresAt) {
		return "unreadable (held until cleared)"
	}
	if !o.Expires() {
		return "never"
	}
	return cmdutil.FormatTime(o.ExpiresAt, now, tty)
}
