package metrics

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kosha-platform/koshactl/internal/human"
)

// Reading is one instance's gauge as the newest read of a live source (a
// scrape) held it: the raw value however unreadable, how many series
// claimed the instance, and the sample's own timestamp.
type Reading struct {
	// Value is the sample's value as read (NaN, ±Inf or 3.4 included).
	Value float64
	// Series counts the samples of the read for this dependency and
	// instance: 1 in a sound exposition; more is a duplicated series.
	Series int
	// SampledAt is the timestamp the exposition gave the sample; zero when
	// it gave none (the read's time then stands for it).
	SampledAt time.Time
	// ReadAt is when the read was made (the source's clock).
	ReadAt time.Time
}

// MaxSampleAge is how far a timestamped sample may lie from the read that
// returned it and still tell the instance's state: twice the contract's
// reporting interval (a publisher reports at least every 60 s). Older, or
// as far in the future, it tells nothing of now.
const MaxSampleAge = 2 * time.Minute

// Standing is how one instance stands toward a change's [Goal].
type Standing uint8

// Standings.
const (
	// Shows: the instance's newest reading is sound and shows the goal.
	Shows Standing = iota + 1
	// Contradicts: a sound reading of a state that is not the goal.
	Contradicts
	// Unknown: the instance belongs to the fleet the change was written to,
	// but nothing it reports can be judged (see [Goal.Stand]).
	Unknown
	// Departed: the instance had stopped reporting before the change was
	// written (its last read lies more than [ScrapeLag] before it): it is
	// not part of the fleet the change is judged on.
	Departed
)

// Doubt names an instance whose standing is [Unknown], and why.
type Doubt struct {
	Instance string `json:"instance"`
	Why      string `json:"why"`
}

// Stand is the one rule of whether an instance of a live source confirms a
// change (goal g, written at since). Only a sound reading can confirm:
//
//   - absent from the newest read: Unknown ("stopped reporting": the fleet
//     shrank against the instances known), or Departed when its last read
//     lies more than [ScrapeLag] before the change;
//   - more than one series for the instance in the read: Unknown (a
//     duplicated series: which one is the instance?);
//   - a value that is not finite, not an integer, or outside 0..3: Unknown
//     (not a state of the gauge);
//   - a timestamped sample taken before the change, or more than
//     [MaxSampleAge] from the read: Unknown (stale; it cannot show the
//     change);
//   - otherwise Shows when the state meets the goal, Contradicts when not.
//
// The string says why an Unknown or Departed instance is one.
func (g Goal) Stand(in InstanceSeries, since time.Time) (Standing, string) {
	r := in.Newest
	if r == nil {
		last := in.LastRead
		if last.IsZero() {
			last = in.LastSeen
		}
		if !last.IsZero() && last.Before(since.Add(-ScrapeLag)) {
			return Departed, "stopped reporting before the change"
		}
		if last.IsZero() {
			return Unknown, "stopped reporting"
		}
		return Unknown, "stopped reporting at " + last.UTC().Format(time.RFC3339)
	}
	if r.Series > 1 {
		return Unknown, fmt.Sprintf("reported %d times in one read, a duplicated series", r.Series)
	}
	if _, ok := exactState(r.Value); !ok {
		return Unknown, "reports " + strconv.FormatFloat(r.Value, 'g', -1, 64) + ", not a state"
	}
	if at := r.SampledAt; !at.IsZero() {
		switch {
		case at.Before(since):
			return Unknown, "sample taken at " + at.UTC().Format(time.RFC3339) + ", before the change"
		case r.ReadAt.Sub(at) > MaxSampleAge:
			return Unknown, "sample taken at " + at.UTC().Format(time.RFC3339) + ", stale by more than " + human.Duration(MaxSampleAge)
		case at.Sub(r.ReadAt) > MaxSampleAge:
			return Unknown, "sample timestamped " + at.UTC().Format(time.RFC3339) + ", after the read"
		}
	}
	if g.meets(r.Value) {
		return Shows, ""
	}
	return Contradicts, ""
}
