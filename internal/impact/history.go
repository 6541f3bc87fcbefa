package impact

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
)

// How a held override's span ended ([Span].Ended).
const (
	EndCleared  = "cleared"
	EndExpired  = "expired"
	EndReplaced = "replaced"
	// EndHolding: still forced at the range's end.
	EndHolding = "holding"
)

// Span is one tool's behaviour under one override within a time range,
// from the audit records of the override's force and of its end: "which
// tools were degraded, when, and how many calls did that touch".
type Span struct {
	Dependency string    `json:"dependency"`
	Tool       string    `json:"tool"`
	Behaviour  Behaviour `json:"behaviour"`
	// From and To are the span within the range asked.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Ended is cleared, expired, replaced (a later force) or holding (still
	// forced at the range's end).
	Ended string `json:"ended"`
	// ForcedBy and Reason are the force's; ForceRecord and EndRecord the
	// records' ids (EndRecord empty when it expired or still holds).
	ForcedBy    string `json:"forced_by"`
	Reason      string `json:"reason,omitempty"`
	ForceRecord string `json:"force_record"`
	EndRecord   string `json:"end_record,omitempty"`
	// CallsPerMinute is the tool's call rate the records saw: the force's,
	// averaged with the clear's when both read one (absent: neither did).
	CallsPerMinute *float64 `json:"calls_per_minute,omitempty"`
	// Calls is the calls the span touched, the rate times its length
	// rounded as [About] does (absent: no rate).
	Calls *int64 `json:"calls,omitempty"`
}

// History reads, from the audit records of breaker overrides (any order;
// other records are ignored), the spans in [since, until) during which
// each forced dependency changed a tool's behaviour. A force opens a span
// until its override's expiry, a later force of the same dependency, or
// its clear, whichever comes first; a force whose record carries no impact
// (written before koshactl recorded one) takes its tools from the matrix,
// without a rate. An override no instance obeys changes no tool. A force
// before since is seen only when its record is among recs: the caller
// reads far enough back.
func History(recs []audit.Record, since, until time.Time) []Span {
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	type held struct {
		force   audit.Record
		expires time.Time // zero: never
	}
	open := map[string]*held{}
	var out []Span
	end := func(dep string, h *held, at time.Time, how string, rec *audit.Record) {
		if !h.expires.IsZero() && !h.expires.After(at) {
			at, how, rec = h.expires, EndExpired, nil
		}
		from, to := h.force.Time, at
		if from.Before(since) {
			from = since
		}
		if to.After(until) {
			to = until
		}
		out = append(out, spans(dep, h.force, rec, from, to, how)...)
	}
	for _, r := range recs {
		dep, ok := strings.CutPrefix(r.Subject, breaker.OverridePrefix)
		if !ok || r.DataPlane || r.Outcome != "ok" || !r.Time.Before(until) {
			continue
		}
		switch r.Action {
		case breaker.ActionForceOpen:
			if h := open[dep]; h != nil {
				end(dep, h, r.Time, EndReplaced, &r)
			}
			h := &held{force: r}
			if o, err := breaker.OverrideFromAuditState(dep, r.After); err == nil && o != nil && o.Expires() {
				h.expires = o.ExpiresAt
			}
			open[dep] = h
		case breaker.ActionClear:
			if h := open[dep]; h != nil {
				end(dep, h, r.Time, EndCleared, &r)
				delete(open, dep)
			}
		}
	}
	for _, d := range slices.Sorted(maps.Keys(open)) {
		end(d, open[d], until, EndHolding, nil)
	}
	slices.SortStableFunc(out, func(a, b Span) int { return a.From.Compare(b.From) })
	return out
}

// spans are the tools' spans of dep's override forced by force and ended
// by endRec (nil: expired or holding) over [from, to); none when empty.
func spans(dep string, force audit.Record, endRec *audit.Record, from, to time.Time, how string) []Span {
	if !to.After(from) {
		return nil
	}
	var tools []audit.ToolRate
	switch im := force.Impact; {
	case im != nil:
		if im.Obeyed {
			tools = im.Tools
		}
	default:
		if row, ok := Lookup(dep); ok && row.Breaker {
			for _, e := range row.Effects {
				tools = append(tools, audit.ToolRate{Tool: e.Tool, Behaviour: string(e.Behaviour)})
			}
		}
	}
	var out []Span
	for _, t := range tools {
		if Behaviour(t.Behaviour) == Unaffected {
			continue
		}
		s := Span{Dependency: dep, Tool: t.Tool, Behaviour: Behaviour(t.Behaviour), From: from, To: to, Ended: how, ForcedBy: force.Actor,
			Reason: force.Reason, ForceRecord: force.ID}
		// The rates read, summed and counted for their average.
		sum, n := 0.0, 0
		if t.CallsPerMinute != nil {
			sum, n = sum+*t.CallsPerMinute, n+1
		}
		if endRec != nil {
			s.EndRecord = endRec.ID
			if how == EndCleared && endRec.Impact != nil {
				if i := slices.IndexFunc(endRec.Impact.Tools, func(e audit.ToolRate) bool { return e.Tool == t.Tool }); i >= 0 && endRec.Impact.Tools[i].CallsPerMinute != nil {
					sum, n = sum+*endRec.Impact.Tools[i].CallsPerMinute, n+1
				}
			}
		}
		if n > 0 {
			rate := sum / float64(n)
			calls := About(rate * to.Sub(from).Minutes())
			s.CallsPerMinute, s.Calls = &rate, &calls
		}
		out = append(out, s)
	}
	return out
}
