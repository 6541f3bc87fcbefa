package metrics

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/gauge"
)

// Poll intervals of a bake ([JudgeReopen] once a poll): a breaker that
// re-opens stays open for its open duration (15-30 s in the LLD), so a
// scrape every 5 s sees it; a CloudWatch period completes once a minute.
const (
	ScrapeBakePoll     = 5 * time.Second
	CloudWatchBakePoll = time.Minute
)

// BakePoll is the poll interval of a bake on a source: live (a scrape) or
// not.
func BakePoll(live bool) time.Duration {
	if live {
		return ScrapeBakePoll
	}
	return CloudWatchBakePoll
}

// DefaultReopenShare is the share of instances above which a bake judges
// that the breaker re-opened: most of them.
const DefaultReopenShare = 0.5

// Reopening is what one snapshot says of a dependency's breakers after a
// clear: how many instances are judged, and which of them report the
// breaker open or half-open again (it opened on its own: the dependency
// still fails them).
type Reopening struct {
	Dependency string `json:"dependency"`
	// Instances counts the instances of the fleet judged (an instance that
	// stopped reporting before the clear is not of it); Reopened names
	// those whose breaker is open or half-open.
	Instances int      `json:"instances"`
	Reopened  []string `json:"reopened"`
	// Unknown names the instances whose reading cannot be judged (they
	// count in Instances, never as re-opened).
	Unknown []Doubt `json:"unknown"`
	// Judged is false when the snapshot holds nothing to judge by (no
	// instance reports; CloudWatch without a complete per-instance
	// breakdown, or no settled period yet): Note says why.
	Judged bool   `json:"judged"`
	Note   string `json:"note,omitempty"`
}

// Tripped reports whether more than share of the judged instances report
// the breaker re-opened (share 0.5: most of them; 0: any).
func (r Reopening) Tripped(share float64) bool {
	return r.Judged && r.Instances > 0 && float64(len(r.Reopened)) > share*float64(r.Instances)
}

// Summary says it in words: "re-opened on 3 of 4 instances (gw-1, gw-2,
// gw-3)".
func (r Reopening) Summary() string {
	if !r.Judged {
		return "not judged: " + r.Note
	}
	s := fmt.Sprintf("re-opened on %d of %d instances", len(r.Reopened), r.Instances)
	if len(r.Reopened) > 0 {
		s += " (" + strings.Join(r.Reopened, ", ") + ")"
	}
	if len(r.Unknown) > 0 {
		s += fmt.Sprintf(", %d unknown", len(r.Unknown))
	}
	return s
}

// JudgeReopen is the one rule of a bake: whether dep's breakers re-opened
// after the clear written at since, by one snapshot.
//
//   - On a scrape every instance is read by [Goal.Stand] toward a released
//     breaker: an unsound reading (absent, duplicated, not a state, stale)
//     is unknown; a sound one of open (2) or half-open (1) is re-opened (a
//     half-open breaker opened first); closed (0) or forced (3: an override
//     someone wrote since, which the put-back leaves alone) is not.
//   - On CloudWatch only a complete per-instance breakdown can say how many
//     instances re-opened: each instance's newest settled period (starting
//     [OverrideCacheTTL] after the clear, complete and readable) re-opened
//     when its worst or best value is open or half-open. Without a complete
//     breakdown, or before a settled period, nothing is judged.
func JudgeReopen(dep string, since time.Time, snap *Snapshot) Reopening {
	r := Reopening{Dependency: dep, Reopened: []string{}, Unknown: []Doubt{}}
	s := snap.Series[dep]
	if snap.Live {
		for _, in := range s.Instances {
			st, why := GoalReleased.Stand(in, since)
			switch st {
			case Departed:
				continue
			case Unknown:
				r.Unknown = append(r.Unknown, Doubt{Instance: in.Instance, Why: why})
			default:
				if reopened(in.Newest.Value) {
					r.Reopened = append(r.Reopened, in.Instance)
				}
			}
			r.Instances++
		}
		if r.Instances == 0 {
			r.Note = "no instance reports the gauge"
		}
	} else {
		judgeReopenPeriods(&r, s, since, snap)
	}
	r.Judged = r.Note == ""
	sort.Strings(r.Reopened)
	sort.Slice(r.Unknown, func(i, j int) bool { return r.Unknown[i].Instance < r.Unknown[j].Instance })
	return r
}

func judgeReopenPeriods(r *Reopening, s Series, since time.Time, snap *Snapshot) {
	if s.Breakdown != BreakdownComplete || len(s.Instances) == 0 {
		r.Note = "CloudWatch's per-instance breakdown is not complete"
		if s.BreakdownNote != "" {
			r.Note += " (" + s.BreakdownNote + ")"
		}
		return
	}
	for _, in := range s.Instances {
		if p := snap.settledPoint(in.Points, since); p != nil {
			r.Instances++
			if reopened(p.Max) || reopened(p.Min) {
				r.Reopened = append(r.Reopened, in.Instance)
			}
		}
	}
	if r.Instances == 0 {
		r.Note = "no settled minute after the clear yet"
	}
}

// reopened reports whether v is the gauge of a breaker that opened on its
// own: open or half-open.
func reopened(v float64) bool {
	return v == float64(gauge.Open) || v == float64(gauge.HalfOpen)
}
