package bake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Alarms reads CloudWatch alarms; *metrics.AlarmSource implements it.
type Alarms interface {
	Describe(ctx context.Context, region string, q metrics.AlarmQuery) (metrics.AlarmRead, error)
}

var _ Alarms = (*metrics.AlarmSource)(nil)

// DefaultMaxMissed is how many reads in a row may fail before a bake ends
// as lost: one failed scrape is noise, three are a source gone.
const DefaultMaxMissed = 3

// Watch watches a fleet after a clear for a bake period: the cleared
// dependencies' breaker_state gauges ([metrics.JudgeReopen]) and the alarms
// named, one read of each a poll.
type Watch struct {
	Gauges metrics.GaugeSource
	// Alarms and AlarmNames are the CloudWatch alarms watched (none: nil
	// and empty). ALARM and INSUFFICIENT_DATA are bad, as AWS AppConfig
	// counts them.
	Alarms     Alarms
	AlarmNames []string
	// Clock times the polls; a [clock.Waiter] (the fake in tests) is waited
	// on, so tests never sleep.
	Clock clock.Clock
	// Share is the share of a dependency's instances above which its
	// breaker re-opened ([metrics.Reopening.Tripped]); zero is "any".
	Share float64
	// Poll is the time between reads; zero is [metrics.BakePoll] of the
	// source as its reads say (5 s on a scrape, a minute on CloudWatch;
	// Live until a read says).
	Poll time.Duration
	// MaxMissed is how many reads in a row may fail before the bake ends as
	// lost; zero is [DefaultMaxMissed].
	MaxMissed int
	// Live says whether the source is a scrape, before a read says.
	Live bool
}

// Verdict is how a bake ended.
type Verdict uint8

// Verdicts.
const (
	// Held: every read over the whole period was judged, and none saw a
	// breaker re-open on the share of the fleet nor a bad alarm.
	Held Verdict = iota + 1
	// Reopened: a dependency's breaker re-opened on more than the share of
	// its instances: its override is put back.
	Reopened
	// AlarmBad: a named alarm was ALARM or INSUFFICIENT_DATA: every
	// cleared override is put back.
	AlarmBad
	// Lost: the gauges or the alarms could not be read (MaxMissed reads in
	// a row), or gave nothing to judge by at the end: no evidence either
	// way, so nothing is put back.
	Lost
	// Interrupted: the bake was canceled (Ctrl-C): the clear stands.
	Interrupted
)

var verdictTokens = [...]string{Held: "held", Reopened: "reopened", AlarmBad: "alarm", Lost: "lost", Interrupted: "interrupted"}

// String is the verdict's token as JSON writes it.
func (v Verdict) String() string {
	if int(v) < len(verdictTokens) && verdictTokens[v] != "" {
		return verdictTokens[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// MarshalText encodes the verdict as its token.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText decodes a verdict's token.
func (v *Verdict) UnmarshalText(text []byte) error {
	for i, tok := range verdictTokens {
		if tok != "" && tok == string(text) {
			*v = Verdict(i)
			return nil
		}
	}
	return fmt.Errorf("parse bake verdict %q: want held, reopened, alarm, lost or interrupted", text)
}

// Failed reports whether the verdict puts overrides back.
func (v Verdict) Failed() bool { return v == Reopened || v == AlarmBad }

// Result is how a bake went.
type Result struct {
	Verdict Verdict
	// Dependencies are each dependency's last judgment, in the order
	// asked.
	Dependencies []metrics.Reopening
	// Tripped names the dependencies to put back: those that re-opened, or
	// every one on a bad alarm.
	Tripped []string
	// BadAlarms are the alarms found bad (AlarmBad).
	BadAlarms []metrics.Alarm
	// Why says in one line what decided the verdict.
	Why string
	// Err is the last read's error (Lost).
	Err error
	// Polls counts the reads; Elapsed is how long the bake ran of Period.
	Polls           int
	Elapsed, Period time.Duration
}

// Run watches deps, cleared at since, for period from now: it returns as
// soon as a read trips (Reopened, AlarmBad), the reads are lost (Lost), or
// ctx ends (Interrupted); Held once the read at the period's end is judged
// and clean.
func (w *Watch) Run(ctx context.Context, deps []string, since time.Time, period time.Duration) Result {
	clk := w.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	live := w.Live
	maxMissed := w.MaxMissed
	if maxMissed <= 0 {
		maxMissed = DefaultMaxMissed
	}
	start := clk.Now()
	deadline := start.Add(period)
	res := Result{Period: period}
	missed := 0
	for {
		now := clk.Now()
		res.Polls++
		poll := w.Poll
		if poll <= 0 {
			poll = metrics.BakePoll(live)
		}
		done, err := w.read(ctx, deps, since, poll, &res, &live)
		res.Elapsed = clk.Now().Sub(start)
		if ctx.Err() != nil {
			res.Verdict, res.Why = Interrupted, "interrupted during the bake"
			return res
		}
		if done {
			return res
		}
		if err != nil {
			missed++
			res.Err = err
			if missed >= maxMissed {
				res.Verdict = Lost
				res.Why = fmt.Sprintf("the bake lost its evidence: %d reads in a row failed (%s)", missed, textsafe.OneLine(err.Error()))
				return res
			}
		} else {
			missed = 0
		}
		if !now.Before(deadline) {
			switch {
			case err != nil:
				res.Verdict, res.Why = Lost, "the bake's last read failed ("+textsafe.OneLine(err.Error())+")"
			case !allJudged(res.Dependencies):
				res.Verdict, res.Why = Lost, "the gauges gave nothing to judge by at the bake's end ("+unjudged(res.Dependencies)+")"
			default:
				res.Verdict, res.Why = Held, "the fleet held for "+period.String()
			}
			return res
		}
		select {
		case <-ctx.Done():
			res.Verdict, res.Why = Interrupted, "interrupted during the bake"
			return res
		case <-clock.After(clk, min(poll, deadline.Sub(now))):
		}
	}
}

// read is one poll: the gauges, then the alarms. done is true when the
// verdict is decided (tripped); err is the read's failure.
func (w *Watch) read(ctx context.Context, deps []string, since time.Time, poll time.Duration, res *Result, live *bool) (done bool, err error) {
	fctx, cancel := context.WithTimeout(ctx, max(poll, 10*time.Second))
	defer cancel()
	snap, gerr := w.Gauges.Fetch(fctx, metrics.FetchRequest{Dependencies: deps, Instances: deps, Window: metrics.WaitWindow})
	if gerr != nil {
		err = fmt.Errorf("gauges (%s): %w", w.Gauges.Describe(), gerr)
	} else {
		*live = snap.Live
		res.Dependencies = res.Dependencies[:0]
		var why []string
		res.Tripped = nil
		for _, d := range deps {
			r := metrics.JudgeReopen(d, since, &snap)
			res.Dependencies = append(res.Dependencies, r)
			if r.Tripped(w.Share) {
				res.Tripped = append(res.Tripped, d)
				why = append(why, d+" "+r.Summary())
			}
		}
		if len(res.Tripped) > 0 {
			res.Verdict, res.Why = Reopened, "the breaker re-opened: "+strings.Join(why, "; ")
			return true, nil
		}
	}
	if len(w.AlarmNames) == 0 {
		return false, err
	}
	bad, aerr := w.badAlarms(fctx)
	if aerr != nil {
		return false, errors.Join(err, fmt.Errorf("alarms: %w", aerr))
	}
	if len(bad) > 0 {
		var names []string
		for _, a := range bad {
			names = append(names, a.Name+" is "+a.State)
		}
		res.Verdict, res.BadAlarms, res.Tripped = AlarmBad, bad, slices.Clone(deps)
		res.Why = "an alarm is bad: " + strings.Join(names, ", ")
		return true, nil
	}
	return false, err
}

// badAlarms reads the named alarms: those in ALARM or INSUFFICIENT_DATA;
// an alarm gone since the bake began is an error (nothing to judge by).
func (w *Watch) badAlarms(ctx context.Context) ([]metrics.Alarm, error) {
	alarms, err := named(ctx, w.Alarms, w.AlarmNames, func(name string) error { return fmt.Errorf("alarm %q no longer exists", name) })
	return slices.DeleteFunc(alarms, func(a metrics.Alarm) bool { return !Bad(a.State) }), err
}

// Bad reports whether an alarm in state counts against a bake: ALARM, or
// INSUFFICIENT_DATA (AWS AppConfig's rule: an alarm that cannot say the
// fleet is fine does not vouch for it).
func Bad(state string) bool {
	return state == metrics.AlarmStateAlarm || state == metrics.AlarmStateInsufficientData
}

// CheckAlarms reads the named alarms before the clear: every one must
// exist (a typo would watch nothing). Their state is not judged yet.
func CheckAlarms(ctx context.Context, a Alarms, names []string) error {
	_, err := named(ctx, a, names, func(name string) error { return fmt.Errorf("%w: alarm %q", ErrNoSuchAlarm, name) })
	return err
}

// named reads the alarms names names, in that order; an alarm that does
// not exist is missing's error.
func named(ctx context.Context, a Alarms, names []string, missing func(name string) error) ([]metrics.Alarm, error) {
	read, err := a.Describe(ctx, "", metrics.AlarmQuery{Names: names})
	if err != nil {
		return nil, err
	}
	out := make([]metrics.Alarm, 0, len(names))
	for _, name := range names {
		i := slices.IndexFunc(read.Alarms, func(a metrics.Alarm) bool { return a.Name == name })
		if i < 0 {
			return nil, missing(name)
		}
		out = append(out, read.Alarms[i])
	}
	return out, nil
}

func allJudged(rs []metrics.Reopening) bool {
	return len(rs) > 0 && !slices.ContainsFunc(rs, func(r metrics.Reopening) bool { return !r.Judged })
}

func unjudged(rs []metrics.Reopening) string {
	var out []string
	for _, r := range rs {
		if !r.Judged {
			out = append(out, r.Dependency+": "+r.Note)
		}
	}
	return strings.Join(out, "; ")
}
