package levers

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"sort"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Marker is what an override written for a window carries in its
// managed_by attribute: the file, the window and the hash of the window's
// content it was written for.
type Marker struct {
	File   string `json:"file"`
	Window string `json:"window"`
	SHA256 string `json:"sha256"`
}

// MarkerOf reads o's marker; ok is false for an override no levers file
// manages, or whose marker cannot be read, or that apply could not have
// written (a dependency name that is not valid, no readable expiry). The
// marker is a claim any writer of the table can make: a file manages an
// override only when apply's own record of its write shows the marker too
// ([File.Written]).
func MarkerOf(o breaker.Override) (Marker, bool) {
	if o.ManagedBy == "" || breaker.ValidateDependency(o.Dependency) != nil || !o.Expires() {
		return Marker{}, false
	}
	var m Marker
	if json.Unmarshal([]byte(o.ManagedBy), &m) != nil || m.File == "" || m.Window == "" {
		return Marker{}, false
	}
	return m, true
}

// markerFor is the managed_by attribute of an override written for w.
func (f *File) markerFor(w Window) string {
	b, _ := json.Marshal(Marker{File: f.Name, Window: w.ID, SHA256: w.Hash()})
	return string(b)
}

// The kinds of difference [Compare] reports.
const (
	// KindNotApplied: a window is in force and its dependency has no
	// override (apply forces it).
	KindNotApplied = "window_not_applied"
	// KindChanged: the dependency's override was written for another
	// window of the file, or for this one before it was edited (apply
	// replaces it).
	KindChanged = "window_changed"
	// KindEnded: an override the file manages whose window ended or was
	// removed from the file (apply clears it).
	KindEnded = "window_ended"
	// KindBlocked: a window is in force, and its dependency holds an
	// override the file does not manage (an incident lever): apply leaves
	// both alone.
	KindBlocked = "window_blocked"
	// KindUnplanned: an active override nobody planned (an incident lever,
	// another file's window): shown, never touched.
	KindUnplanned = "unplanned_override"
	// KindNotObeyed: an active override the fleet does not obey.
	KindNotObeyed = "not_obeyed"
	// KindLapsedForced: an override that lapsed or was cleared, still
	// reported forced by the fleet.
	KindLapsedForced = "lapsed_still_forced"
	// KindFrozen: a window to open (or to rewrite) while the fleet is
	// frozen: held until the freeze ends. A window already open lapses at
	// its end as always, and its clear goes ahead.
	KindFrozen = "window_frozen"
)

// The actions apply takes for a difference.
const (
	ActionForce = "force"
	ActionClear = "clear"
	ActionNone  = "none"
)

// Difference is one way the file, the table and the fleet disagree.
type Difference struct {
	Kind       string
	Dependency string
	// Window is the window concerned (nil for an unplanned override or a
	// fleet-only difference); Start and End its occurrence in force.
	Window     *Window
	Start, End time.Time
	// Override is the stored override concerned, nil when there is none.
	Override *breaker.Override
	// Action is what apply does about it: force, clear or none.
	Action string
	// Detail says it in one line.
	Detail string
}

// Applies reports whether apply would change something for d (force or
// clear). A difference apply leaves alone (an incident lever, a window it
// cannot take, the fleet's side) is information: diff's exit code is about
// what apply would change, so a scheduled diff does not stay red for a
// whole incident.
func (d Difference) Applies() bool { return d.Action != ActionNone }

// Applicable counts the differences apply would change.
func Applicable(ds []Difference) int {
	n := 0
	for _, d := range ds {
		if d.Applies() {
			n++
		}
	}
	return n
}

// State is what the file is compared with at one instant.
type State struct {
	Now time.Time
	// Overrides are the table's override items, active or not.
	Overrides []breaker.Override
	// Statuses are the fleet's merged statuses; nil when the gauges could
	// not be read (the fleet's side is then not compared).
	Statuses []metrics.DependencyStatus
	// Written are the overrides apply's own records say it wrote
	// ([File.Written], by [WrittenKey]): a file manages only those of them its
	// marker names. Nil: none (every override is then left alone).
	Written map[string]bool
	// Freeze is the fleet's freeze (nil: none recorded): while it holds,
	// no window is opened or rewritten (KindFrozen).
	Freeze *freeze.Freeze
}

// Compare lists every difference between f (what should be in force at
// st.Now), the table's overrides and the fleet's gauges, sorted by
// dependency; none means in sync.
func Compare(f *File, st State) []Difference {
	var out []Difference
	byDep := map[string]*breaker.Override{}
	for i := range st.Overrides {
		byDep[st.Overrides[i].Dependency] = &st.Overrides[i]
	}
	inForce := map[string]bool{}
	for i := range f.Windows {
		w := &f.Windows[i]
		start, end, ok := w.At(st.Now)
		if !ok {
			continue
		}
		inForce[w.Dependency] = true
		d := Difference{Dependency: w.Dependency, Window: w, Start: start, End: end}
		o := byDep[w.Dependency]
		active := o != nil && o.ActiveAt(st.Now)
		m, managed := Marker{}, false
		if o != nil {
			m, managed = st.managed(f, *o)
		}
		switch {
		case !active:
			d.Kind, d.Action, d.Override = KindNotApplied, ActionForce, o
			d.Detail = fmt.Sprintf("window %s is in force until %s and %s has no override", w.ID, end.Format(time.RFC3339), w.Dependency)
		case !managed:
			d.Kind, d.Action, d.Override = KindBlocked, ActionNone, o
			d.Detail = fmt.Sprintf("window %s is in force, and %s holds an override the file does not manage (%s: %s): left alone", w.ID,
				w.Dependency, o.Actor, o.Reason)
		case m.Window != w.ID || m.SHA256 != w.Hash() || !o.ExpiresAt.Equal(end):
			d.Kind, d.Action, d.Override = KindChanged, ActionForce, o
			d.Detail = fmt.Sprintf("%s's override was written for window %s as it was then; window %s is in force until %s",
				w.Dependency, m.Window, w.ID, end.Format(time.RFC3339))
		default:
			continue
		}
		out = append(out, d)
	}
	for _, o := range st.Overrides {
		if inForce[o.Dependency] || !o.ActiveAt(st.Now) {
			continue
		}
		o := o
		if m, ok := st.managed(f, o); ok {
			why := "ended"
			if f.window(m.Window) == nil {
				why = "was removed from the file"
			}
			out = append(out, Difference{Kind: KindEnded, Dependency: o.Dependency, Override: &o, Action: ActionClear,
				Detail: fmt.Sprintf("%s's override is managed by the file, and its window %s %s", o.Dependency, m.Window, why)})
			continue
		}
		out = append(out, Difference{Kind: KindUnplanned, Dependency: o.Dependency, Override: &o, Action: ActionNone,
			Detail: fmt.Sprintf("%s is forced by %s (%s), which no window plans: an incident lever, left alone", o.Dependency, o.Actor, o.Reason)})
	}
	for _, s := range st.Statuses {
		switch {
		case s.OverrideActive && s.Fleet != nil && s.Fleet.Verdict == metrics.NotObeyed:
			out = append(out, Difference{Kind: KindNotObeyed, Dependency: s.Dependency, Override: s.Override, Action: ActionNone,
				Detail: fmt.Sprintf("%s's override is in force and the fleet does not obey it: %s", s.Dependency, s.Fleet.Note)})
		case !s.OverrideActive && (s.Fleet != nil && s.Fleet.Verdict == metrics.NotObeyed || s.Fleet == nil && s.GaugeState == metrics.Forced):
			out = append(out, Difference{Kind: KindLapsedForced, Dependency: s.Dependency, Override: s.Override, Action: ActionNone,
				Detail: fmt.Sprintf("%s has no override in force, and the fleet still reports it forced", s.Dependency)})
		}
	}
	if st.Freeze != nil && st.Freeze.FrozenAt(st.Now) {
		for i, d := range out {
			if d.Action == ActionForce {
				out[i].Kind, out[i].Action = KindFrozen, ActionNone
				out[i].Detail = fmt.Sprintf("window %s is held: %s", d.Window.ID, st.Freeze.Describe(st.Now))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Dependency < out[j].Dependency })
	return out
}

// managed reads o's marker when f manages o: the marker names f, and
// apply's own record of o's write shows it.
func (st State) managed(f *File, o breaker.Override) (Marker, bool) {
	m, ok := MarkerOf(o)
	return m, ok && m.File == f.Name && o.WriteID != "" && st.Written[WrittenKey(o)]
}

func (f *File) window(id string) *Window {
	for i := range f.Windows {
		if f.Windows[i].ID == id {
			return &f.Windows[i]
		}
	}
	return nil
}

// ApprovalWindow is w as a levers.window change request binds it: its
// content and the occurrence starting at occurrence, on contextName.
func (f *File) ApprovalWindow(w Window, occurrence time.Time, contextName string) approval.Window {
	return approval.Window{File: f.Name, Context: contextName, ID: w.ID, Dependency: w.Dependency,
		Start: w.Start.UTC().Format(time.RFC3339), End: w.End.UTC().Format(time.RFC3339), Repeat: w.Repeat,
		Occurrence: occurrence.UTC().Format(time.RFC3339), SHA256: w.Hash()}
}

// Plan is what makes the table match f for the overrides f manages, from
// the differences [Compare] found, as actor: a force (expiring at its
// window's end) for each window in force without its override, a clear for
// each managed override whose window is over, each decided on the
// override Compare read (its write is conditional on it). Nothing else is
// touched. The changes are committed together, in one transaction.
func (f *File) Plan(diffs []Difference, actor string) []lever.Change {
	var out []lever.Change
	for _, d := range diffs {
		var c lever.Change
		switch d.Action {
		case ActionForce:
			p := breaker.ForceParams{ExpiresAt: d.End, ManagedBy: f.markerFor(*d.Window), Planned: true}
			if d.Override != nil {
				v := d.Override.Version
				p.SeenVersion = &v
			}
			c = breaker.ForceOpen(audit.TruncateReason(fmt.Sprintf("%s (levers %s, window %s)", d.Window.Reason, f.Name, d.Window.ID)), p, d.Dependency)
		case ActionClear:
			c = breaker.Clear(audit.TruncateReason(fmt.Sprintf("levers %s: %s", f.Name, d.Detail)), d.Dependency)
		default:
			continue
		}
		c.Actor, c.Read = actor, map[string]store.Item{d.Dependency: nil}
		if d.Override != nil {
			c.Read[d.Dependency] = d.Override.Raw
		}
		out = append(out, c)
	}
	return out
}

// Apply is `koshactl apply`'s use case: the changes [File.Plan] made,
// each decided on the override Compare read (nothing is read again),
// written together by svc (one transaction while they fit one; an operator
// acting meanwhile makes it a conflict, nothing of it written). One report
// per change, in order.
func Apply(ctx context.Context, svc *lever.Service, plan []lever.Change) ([]lever.Report, error) {
	ps := make([]*lever.Planned, len(plan))
	for i, c := range plan {
		p, err := svc.Plan(ctx, c)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return svc.CommitAll(ctx, ps...)
}
