package metrics

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/gauge"
)

// IdleSync is the longest an idle instance goes without applying the
// override it has cached (the data plane's override poll: a fifth of the
// cache period). A busy instance applies it on its next call.
const IdleSync = OverrideCacheTTL / 5

// ScrapeLag is how long a scraped (Prometheus) fleet may take to show an
// override change: the override cache, then the idle instance's next sync
// (5 s + 1 s). A scrape reads each instance's state as it is now, so nothing
// else lags.
const ScrapeLag = OverrideCacheTTL + IdleSync

// Lagger is implemented by gauge sources that know how late they show an
// override change; [CloudWatch] and [Prometheus] do.
type Lagger interface {
	// Lag is the source's documented bound: [OverrideLag] for CloudWatch,
	// [ScrapeLag] for a scrape.
	Lag() time.Duration
}

// Lag implements [Lagger]: [ScrapeLag].
func (p *Prometheus) Lag() time.Duration { return ScrapeLag }

// Lag implements [Lagger]: [OverrideLag].
func (c *CloudWatch) Lag() time.Duration { return OverrideLag }

var (
	_ Lagger = (*Prometheus)(nil)
	_ Lagger = (*CloudWatch)(nil)
)

// LagOf returns src's bound, or [OverrideLag] (the longest) for a source
// that does not say.
func LagOf(src GaugeSource) time.Duration {
	if l, ok := src.(Lagger); ok {
		return l.Lag()
	}
	return OverrideLag
}

// DefaultWaitTimeout is how long a wait for the fleet lasts unless told
// otherwise: the source's bound plus a margin of a quarter of it, at least
// 5 s (6 s + 5 s on a scrape, 4m05s + 1m01s on CloudWatch).
func DefaultWaitTimeout(lag time.Duration) time.Duration {
	return lag + max(lag/4, 5*time.Second)
}

// Poll intervals of [Waiter]: a scrape is cheap and current; a CloudWatch
// period completes once a minute, so polling it faster only costs requests.
const (
	ScrapeWaitPoll     = 500 * time.Millisecond
	CloudWatchWaitPoll = 10 * time.Second
)

// WaitWindow is how far back a wait's fetches read: the lag bound and a
// few periods, not the dashboard's hour (fewer datapoints per request).
const WaitWindow = 10 * time.Minute

// Goal is what an override change asks of a dependency's breaker_state
// gauges.
type Goal uint8

// Goals.
const (
	// GoalForced: every reporting instance reports forced (3), after a
	// force-open.
	GoalForced Goal = iota + 1
	// GoalReleased: no reporting instance reports forced, after a clear.
	GoalReleased
)

var goalTokens = [...]string{GoalForced: "forced", GoalReleased: "released"}

// String returns "forced" or "released".
func (g Goal) String() string { return token(goalTokens[:], g, "goal") }

// MarshalText encodes the goal as its name.
func (g Goal) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText decodes a goal's name.
func (g *Goal) UnmarshalText(text []byte) error { return parseToken(goalTokens[:], text, "goal", g) }

// meets reports whether a gauge value shows the goal: forced is exactly 3,
// released exactly another state (0, 1 or 2).
func (g Goal) meets(v float64) bool {
	b, ok := exactState(v)
	if !ok {
		return false
	}
	if g == GoalForced {
		return b == gauge.ForcedOpen
	}
	return b != gauge.ForcedOpen
}

// meetsPeriod reports whether a period's worst and best show the goal for
// every value in it: forced needs the best forced, released the worst not.
func (g Goal) meetsPeriod(p Point) bool {
	if g == GoalForced {
		return g.meets(p.Min)
	}
	return g.meets(p.Max)
}

// Verdict is what the gauges say about an override change.
type Verdict uint8

// Verdicts.
const (
	// Converging: within the source's bound and not yet confirmed; the
	// fleet may still be catching up.
	Converging Verdict = iota
	// Confirmed: the gauges show the goal.
	Confirmed
	// NotObeyed: past the bound, and the gauges show some instance (or the
	// fleet's worst or best) contradicting the goal: an instance ignores
	// the store.
	NotObeyed
	// Unconfirmed: past the bound, and no gauge recent enough to judge by
	// (nothing reports, or no complete period yet).
	Unconfirmed
)

var verdictTokens = [...]string{Converging: "converging", Confirmed: "confirmed", NotObeyed: "not_obeyed", Unconfirmed: "unconfirmed"}

// String returns the verdict's token as JSON writes it: converging,
// confirmed, not_obeyed or unconfirmed.
func (v Verdict) String() string { return token(verdictTokens[:], v, "verdict") }

// Label returns the verdict as a screen writes it ("not obeyed").
func (v Verdict) Label() string {
	if v == NotObeyed {
		return "not obeyed"
	}
	return v.String()
}

// MarshalText encodes the verdict as its token.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText decodes a verdict's token.
func (v *Verdict) UnmarshalText(text []byte) error {
	return parseToken(verdictTokens[:], text, "verdict", v)
}

// Change is one override change whose effect on the gauges is judged.
type Change struct {
	Dependency string
	Goal       Goal
	// Since is when the change was written (the override's created_at, or
	// the clear's time).
	Since time.Time
}

// Convergence is what one snapshot's gauges say about a [Change].
type Convergence struct {
	Change
	Verdict Verdict
	// At is the snapshot's time; Elapsed is At - Since; Bound is the
	// source's lag bound the verdict was judged with.
	At      time.Time
	Elapsed time.Duration
	Bound   time.Duration
	// PerInstance reports that Instances and Confirmed count instances (a
	// scrape, or a complete CloudWatch breakdown). Otherwise they are the
	// judged CloudWatch period's SampleCount: about the instances that
	// reported in it, all of them when the goal is met.
	PerInstance bool
	Instances   int
	Confirmed   int
	// Stragglers name the instances that contradict the goal, where the
	// source names instances (a scrape; CloudWatch with the breakdown).
	Stragglers []string
	// Unknown names the instances of a scrape whose reading cannot be
	// judged ([Goal.Stand]): counted in Instances, never confirmed.
	Unknown []Doubt
	// Period is the start of the CloudWatch period judged (zero for a
	// scrape, or when no period is complete and settled yet); Worst and Best
	// are its statistics.
	Period      time.Time
	Worst, Best float64
	// Note says in words what is awaited or wrong.
	Note string
}

// Judge applies the rule of "did the fleet obey" to one snapshot:
//
//   - On a scrape ([Snapshot.Live]) every instance the source knows is
//     judged by [Goal.Stand]: forced (3) on each after a force; none forced
//     after a clear. Confirmed when every one of at least one instance
//     shows the goal: an instance that reports no state, a stale sample or
//     a duplicated series, or that stopped reporting, is unknown and keeps
//     the change unconfirmed.
//   - On CloudWatch the fleet's statistics of the newest complete period
//     are judged: a period that starts at least [OverrideCacheTTL] after the
//     change (every obeying instance applied it before the period began) and
//     ended at least the snapshot's ReadDelay ago (every datapoint in it is
//     readable). Confirmed when its Minimum is forced (after a force) or its
//     Maximum is not (after a clear). The per-instance breakdown, when read,
//     names the instances whose settled periods contradict the goal.
//
// Not confirmed within the source's bound ([Snapshot.Lag]) is
// [Converging]; past it, [NotObeyed] when the gauges contradict the goal,
// [Unconfirmed] when there is nothing to judge by (or, on a scrape, only
// instances whose standing is unknown keep it from confirmation).
func Judge(c Change, snap *Snapshot) Convergence {
	cv := Convergence{Change: c, At: snap.FetchedAt, Bound: snap.lag()}
	cv.Elapsed = max(snap.FetchedAt.Sub(c.Since), 0)
	s := snap.Series[c.Dependency]
	var judged, met bool
	if snap.Live {
		judged, met = judgeLive(&cv, s)
	} else {
		judged, met = judgePeriods(&cv, s, snap)
	}
	switch {
	case judged && met:
		cv.Verdict, cv.Note = Confirmed, ""
	case cv.Elapsed <= cv.Bound:
		cv.Verdict = Converging
	case judged:
		cv.Verdict = NotObeyed
	default:
		cv.Verdict = Unconfirmed
	}
	return cv
}

// judgeLive judges a scrape's instances, each by [Goal.Stand]. It has
// judged when every instance showed the goal or one contradicts it; an
// unknown one alone is nothing to judge by.
func judgeLive(cv *Convergence, s Series) (judged, met bool) {
	cv.PerInstance = true
	for _, in := range s.Instances {
		st, why := cv.Goal.Stand(in, cv.Since)
		switch st {
		case Shows:
			cv.Confirmed++
		case Contradicts:
			cv.Stragglers = append(cv.Stragglers, in.Instance)
		case Unknown:
			cv.Unknown = append(cv.Unknown, Doubt{Instance: in.Instance, Why: why})
		case Departed:
			continue
		}
		cv.Instances++
	}
	sort.Strings(cv.Stragglers)
	sort.Slice(cv.Unknown, func(i, j int) bool { return cv.Unknown[i].Instance < cv.Unknown[j].Instance })
	if cv.Instances == 0 {
		cv.Note = "no instance reports the gauge"
		return false, false
	}
	met = cv.Confirmed == cv.Instances
	return met || len(cv.Stragglers) > 0, met
}

// judgePeriods judges CloudWatch's newest complete, settled period, and
// names stragglers from the breakdown when there is one.
func judgePeriods(cv *Convergence, s Series, snap *Snapshot) (judged, met bool) {
	fleet := snap.settledPoint(s.Timeline, cv.Since)
	if s.Breakdown != BreakdownNotFetched && len(s.Instances) > 0 {
		cv.PerInstance = s.Breakdown == BreakdownComplete
		for _, in := range s.Instances {
			last := snap.settledPoint(in.Points, cv.Since)
			if last == nil {
				continue
			}
			cv.Instances++
			if cv.Goal.meetsPeriod(*last) {
				cv.Confirmed++
			} else {
				cv.Stragglers = append(cv.Stragglers, in.Instance)
			}
		}
		sort.Strings(cv.Stragglers)
	}
	if fleet == nil {
		settled := cv.Since.Add(OverrideCacheTTL)
		first := settled.UTC().Truncate(snap.Period)
		if first.Before(settled) {
			first = first.Add(snap.Period)
		}
		cv.Note = fmt.Sprintf("waiting for the minute from %s to complete and be readable (at %s)",
			first.Format("15:04:05"), first.Add(snap.Period+snap.ReadDelay).Format("15:04:05"))
		return false, false
	}
	cv.Period, cv.Worst, cv.Best = fleet.Time, fleet.Max, fleet.Min
	if !cv.PerInstance {
		cv.Instances = fleet.Samples
		if cv.Goal.meetsPeriod(*fleet) {
			cv.Confirmed = fleet.Samples
		}
	}
	met = cv.Goal.meetsPeriod(*fleet)
	if !met {
		cv.Note = fmt.Sprintf("the minute from %s: worst %s, best %s", fleet.Time.Format("15:04:05"), GaugeLabel(fleet.Max), GaugeLabel(fleet.Min))
	}
	return true, met
}

// settledPoint is the newest of points that starts at least
// [OverrideCacheTTL] after since (every obeying instance applied the change
// before it began) and ended at least the snapshot's ReadDelay ago (every
// datapoint in it is readable); nil when none does.
func (s *Snapshot) settledPoint(points []Point, since time.Time) *Point {
	settled := since.Add(OverrideCacheTTL)
	for i := len(points) - 1; i >= 0; i-- {
		if p := &points[i]; !p.Time.Before(settled) && !p.Time.Add(s.Period+s.ReadDelay).After(s.FetchedAt) {
			return p
		}
	}
	return nil
}

// lag is the snapshot's bound, [OverrideLag] when the source did not say.
func (s *Snapshot) lag() time.Duration {
	if s == nil || s.Lag <= 0 {
		return OverrideLag
	}
	return s.Lag
}

// JudgeStatus judges a merged status's override against its gauges: an
// active override must show as forced (since its created_at), an expired
// one as released (since its expiry). A dependency without an override
// item, or with an unreadable time, has nothing to judge: nil.
func JudgeStatus(st DependencyStatus, snap *Snapshot) *Convergence {
	o := st.Override
	if o == nil || snap == nil {
		return nil
	}
	c := Change{Dependency: st.Dependency, Goal: GoalForced, Since: o.CreatedAt}
	if !st.OverrideActive {
		if !o.Expires() || o.ExpiresAt.IsZero() {
			return nil
		}
		c.Goal, c.Since = GoalReleased, o.ExpiresAt
	}
	if c.Since.IsZero() {
		return nil
	}
	cv := Judge(c, snap)
	return &cv
}

// Summary says in words where the change stands, naming which instances
// are which: "forced on 2 of 4 instances (not yet: gw-1, gw-2)" while the
// fleet converges; "forced on 3 of 4 instances, not obeyed (not forced:
// gw-3)" past the bound; "released on 3 of 4 instances, unconfirmed
// (unknown: gw-2 reports NaN, not a state)" when an instance cannot be
// judged; on CloudWatch without the breakdown, "minute 19:01 worst forced
// best closed, ~4 samples". The CLI's --wait, the dashboard and drills all
// print it. Instance names come from the gauge source: render the text with
// textsafe.
func (cv Convergence) Summary() string {
	var s string
	switch {
	case cv.PerInstance || len(cv.Stragglers) > 0 || len(cv.Unknown) > 0:
		s = fmt.Sprintf("%s on %d of %d instances", cv.Goal, cv.Confirmed, cv.Instances)
	case !cv.Period.IsZero():
		s = fmt.Sprintf("minute %s worst %s best %s, ~%d samples", cv.Period.Format("15:04"), GaugeLabel(cv.Worst), GaugeLabel(cv.Best), cv.Instances)
	case cv.Note != "":
		s = cv.Note
	default:
		s = "no gauges read yet"
	}
	if cv.Verdict != Converging && cv.Verdict != Confirmed {
		s += ", " + cv.Verdict.Label()
	}
	label := "not yet"
	if cv.Verdict != Converging {
		label = cv.Goal.lacking()
	}
	return s + standingGroups(label, cv.Stragglers, cv.Unknown)
}

// standingGroups is the parenthesis a summary ends with: the instances
// that contradict the goal (after lacking) and those unknown, with why; ""
// when there are none.
func standingGroups(lacking string, stragglers []string, unknown []Doubt) string {
	var groups []string
	if len(stragglers) > 0 {
		groups = append(groups, lacking+": "+strings.Join(stragglers, ", "))
	}
	if len(unknown) > 0 {
		doubts := make([]string, len(unknown))
		for i, d := range unknown {
			doubts[i] = d.Instance + " " + d.Why
		}
		groups = append(groups, "unknown: "+strings.Join(doubts, "; "))
	}
	if len(groups) == 0 {
		return ""
	}
	return " (" + strings.Join(groups, "; ") + ")"
}

// lacking names the instances that contradict the goal: "not forced" after
// a force, "still forced" after a clear.
func (g Goal) lacking() string {
	if g == GoalReleased {
		return "still forced"
	}
	return "not " + g.String()
}

// Pending returns the changes of cs not yet confirmed, in order.
func Pending(cs []Convergence) []Convergence {
	return slices.DeleteFunc(slices.Clone(cs), func(c Convergence) bool { return c.Verdict == Confirmed })
}
