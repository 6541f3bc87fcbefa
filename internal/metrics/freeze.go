package metrics

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/freeze"
)

// FreezeStanding is what one read of the fleet's chaos_frozen gauges says
// about a freeze (Want true: every instance should report 1) or its lift
// (Want false: every one 0), docs/contracts/freeze.md#the-gauge. It is the
// freeze lever's --wait, as [Judge] is force-open's.
type FreezeStanding struct {
	Want bool `json:"want_frozen"`
	// Instances names every instance that reports the gauge, sorted;
	// Obeying those that show Want, Stragglers those that show the other
	// value, Unknown those whose value is neither 0 nor 1 or that report
	// it more than once.
	Instances  []string `json:"instances"`
	Obeying    []string `json:"obeying"`
	Stragglers []string `json:"stragglers"`
	Unknown    []Doubt  `json:"unknown"`
}

// Confirmed reports whether at least one instance reports the gauge and
// every one shows Want.
func (s FreezeStanding) Confirmed() bool {
	return len(s.Instances) > 0 && len(s.Obeying) == len(s.Instances)
}

// Summary says where the fleet stands, naming the instances that do not
// obey: "frozen on 2 of 3 instances (not frozen: gw-3)", "unfrozen on 3 of
// 3 instances", "no instance reports kosha_chaos_frozen". Instance names
// come from the source: render the text with textsafe.
func (s FreezeStanding) Summary() string {
	if len(s.Instances) == 0 {
		return "no instance reports " + freeze.PrometheusMetricName
	}
	goal, lacking := "frozen", "not frozen"
	if !s.Want {
		goal, lacking = "unfrozen", "still frozen"
	}
	return fmt.Sprintf("%s on %d of %d instances", goal, len(s.Obeying), len(s.Instances)) + standingGroups(lacking, s.Stragglers, s.Unknown)
}

// JudgeFreeze judges one read of the gauge: values holds each instance's
// samples (more than one is a duplicated series, unknown).
func JudgeFreeze(values map[string][]float64, wantFrozen bool) FreezeStanding {
	s := FreezeStanding{Want: wantFrozen, Instances: slices.Sorted(maps.Keys(values)), Obeying: []string{}, Stragglers: []string{},
		Unknown: []Doubt{}}
	want := 0.0
	if wantFrozen {
		want = 1
	}
	for _, in := range s.Instances {
		vs := values[in]
		switch {
		case len(vs) != 1:
			s.Unknown = append(s.Unknown, Doubt{Instance: in, Why: fmt.Sprintf("reports %d series", len(vs))})
		case vs[0] != 0 && vs[0] != 1:
			s.Unknown = append(s.Unknown, Doubt{Instance: in, Why: fmt.Sprintf("reports %v, neither 0 nor 1", vs[0])})
		case vs[0] == want:
			s.Obeying = append(s.Obeying, in)
		default:
			s.Stragglers = append(s.Stragglers, in)
		}
	}
	return s
}

// FreezeGauges scrapes every target's kosha_chaos_frozen samples, by
// instance (the instance label, or the target's host:port without one).
// A target that fails is an error when no target answers, and otherwise
// leaves its instances out (they then cannot confirm: a straggler is an
// instance that answers and disagrees).
func (p *Prometheus) FreezeGauges(ctx context.Context) (map[string][]float64, error) {
	results, _, err := scrapeAll(p.urls, func(u string) (map[string][]float64, error) {
		out := map[string][]float64{}
		err := p.scrapeFamily(ctx, u, freeze.PrometheusMetricName, func(s sample, ok bool) {
			if ok {
				out[s.instance] = append(out[s.instance], s.value)
			}
		})
		return out, err
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]float64{}
	for _, r := range results {
		for in, vs := range r {
			out[in] = append(out[in], vs...)
		}
	}
	return out, nil
}

// FreezeReader reads the fleet's chaos_frozen gauges, by instance
// (*[Prometheus] does).
type FreezeReader interface {
	FreezeGauges(ctx context.Context) (map[string][]float64, error)
}

var _ FreezeReader = (*Prometheus)(nil)

// FreezeWait is how a wait for the fleet to report a freeze (or its lift)
// ended: the last standing judged, the polls made and the time taken.
type FreezeWait struct {
	Standing FreezeStanding
	Polls    int
	Elapsed  time.Duration
	Timeout  time.Duration
	// FetchErr is the last read's error, when it failed.
	FetchErr error
}

// WaitFreeze polls r every poll (zero: [ScrapeWaitPoll]) until every
// instance reports want ([FreezeStanding.Confirmed]), timeout passes (zero:
// [DefaultWaitTimeout] of [ScrapeLag] plus the data plane's cache period,
// which a freeze waits for before the gauge can change) or ctx ends. Not
// confirmed in time: the result and an error wrapping [ErrNotConfirmed].
func WaitFreeze(ctx context.Context, clk clock.Clock, r FreezeReader, want bool, timeout, poll time.Duration) (FreezeWait, error) {
	if clk == nil {
		clk = clock.Real{}
	}
	if timeout <= 0 {
		timeout = DefaultWaitTimeout(ScrapeLag) + freeze.CacheTTL
	}
	if poll <= 0 {
		poll = ScrapeWaitPoll
	}
	start := clk.Now()
	w := FreezeWait{Timeout: timeout, Standing: FreezeStanding{Want: want}}
	confirmed, err := pollUntil(ctx, clk, timeout, func(fctx context.Context) (bool, time.Duration) {
		values, err := r.FreezeGauges(fctx)
		w.Polls++
		if ctx.Err() != nil {
			return false, 0
		}
		w.FetchErr = err
		if err == nil {
			w.Standing = JudgeFreeze(values, want)
		}
		w.Elapsed = clk.Now().Sub(start)
		return err == nil && w.Standing.Confirmed(), poll
	})
	switch {
	case err != nil:
		return w, err
	case confirmed:
		return w, nil
	}
	w.Elapsed = clk.Now().Sub(start)
	return w, errors.Join(ErrNotConfirmed, w.FetchErr)
}
