package impact

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// DefaultTimeout bounds a rate source's read in [Of]: past it the impact
// is the matrix's alone, and says so.
const DefaultTimeout = 15 * time.Second

// readBound is how long [Of] lets a source read within ctx: DefaultTimeout,
// and never more than half the time ctx has left, so the change the
// impact goes with (a drill step under its timeout) keeps the other half.
func readBound(ctx context.Context, now time.Time) time.Duration {
	bound := DefaultTimeout
	if d, ok := ctx.Deadline(); ok {
		bound = min(bound, max(d.Sub(now), 0)/2)
	}
	return bound
}

// Request is a lever forcing dependencies open.
type Request struct {
	// Dependencies are forced, in the order the lever names them.
	Dependencies []string
	// For is how long the overrides hold; zero means until cleared (no
	// expiry), and estimates are then per hour.
	For time.Duration
	// Clear is true for a clear: the report says what the overrides did
	// until then (the same tools, their rates now), For is zero, and it
	// estimates nothing.
	Clear bool
}

// RateSource reads live call rates ([metrics.RateSource]:
// [metrics.PrometheusRates], [metrics.CloudWatchRates]).
type RateSource interface {
	Describe() string
	Rates(ctx context.Context, req metrics.RateRequest) (metrics.CallRates, error)
}

var _ RateSource = metrics.RateSource(nil)

// Report is the impact of a lever: the `impact` section of a lever's JSON
// (docs/contracts/degradation-matrix.md, "The impact section").
type Report struct {
	// Dependencies are the forced dependencies, in the request's order,
	// each with what its row says beyond the tools and whether the fleet
	// obeys its override.
	Dependencies []Dependency `json:"dependencies"`
	// Tools are the tools whose behaviour the forced dependencies name, in
	// [ToolNames] order: every one whose behaviour changes, and those the
	// matrix says stay unaffected (SQS's writes, core-api's health).
	Tools []ToolImpact `json:"tools"`
	// ForSeconds is how long the overrides hold; 0 means until cleared.
	ForSeconds float64 `json:"for_seconds"`
	// Rates says where the call rates came from, or why there are none
	// (absent: no source was asked).
	Rates *Rates `json:"rates,omitempty"`
	// Clear is true for the impact of a clear: the tools' behaviour is
	// what the overrides did until the clear, and there is no estimate.
	Clear bool `json:"clear,omitempty"`
}

// Dependency is one forced dependency.
type Dependency struct {
	Dependency string `json:"dependency"`
	// InMatrix is false for a dependency the matrix has no row of: what
	// forcing it does to the tools is unknown.
	InMatrix bool `json:"in_matrix"`
	// Obeyed is true when the data plane has a breaker on the dependency,
	// so forcing it changes the fleet; false for a dependency without one
	// (its override is written and no instance reads it) and for one the
	// matrix does not know.
	Obeyed bool `json:"obeyed"`
	// Platform and PlatformSignal are the row's change beyond the tools.
	Platform       string `json:"platform,omitempty"`
	PlatformSignal string `json:"platform_signal,omitempty"`
	// WhenDown are the row's effects for a dependency whose override no
	// instance obeys: what the tools do when the dependency itself is
	// down, which the override will not cause.
	WhenDown []Effect `json:"when_down,omitempty"`
	// Note says, for a person, what forcing it does.
	Note string `json:"note"`
	// CallsPerMinute is the dependency's live call rate (absent: not read,
	// or the source has no series of it).
	CallsPerMinute *float64 `json:"calls_per_minute,omitempty"`
}

// ToolImpact is one tool's behaviour while the overrides hold.
type ToolImpact struct {
	Tool      string    `json:"tool"`
	Behaviour Behaviour `json:"behaviour"`
	Detail    string    `json:"detail"`
	Signal    Signal    `json:"signal"`
	// Because are the forced dependencies that cause the behaviour (the
	// worst one, when several touch the tool).
	Because []string `json:"because"`
	// CallsPerMinute is the tool's live call rate (absent: not read).
	CallsPerMinute *float64 `json:"calls_per_minute,omitempty"`
	// Estimate is the calls the behaviour touches while the overrides
	// hold (absent: no rate, or an unaffected tool).
	Estimate *Estimate `json:"estimate,omitempty"`
}

// Estimate is how many calls a behaviour touches over a span.
type Estimate struct {
	// Calls is the rate times the span, rounded as [About] does.
	Calls int64 `json:"calls"`
	// OverSeconds is the span: the overrides' lifetime, or an hour when
	// they hold until cleared.
	OverSeconds float64 `json:"over_seconds"`
	// Text says it: "about 750 screenings deferred over 30m".
	Text string `json:"text"`
}

// Rates says where a report's call rates came from.
type Rates struct {
	Source string `json:"source"`
	// Method says how the rates were measured; WindowSeconds the span they
	// are averaged over.
	Method        string    `json:"method,omitempty"`
	WindowSeconds float64   `json:"window_seconds,omitempty"`
	ReadAt        time.Time `json:"read_at,omitzero"`
	// Error is why the source could not be read: the report is then the
	// matrix's alone.
	Error    string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Static is the impact of req from the matrix alone, without rates.
func Static(req Request) Report {
	r := Report{Dependencies: []Dependency{}, Tools: []ToolImpact{}, ForSeconds: max(req.For, 0).Seconds(), Clear: req.Clear}
	if req.Clear {
		r.ForSeconds = 0
	}
	type cause struct {
		effect  Effect
		because []string
	}
	worst := map[string]*cause{}
	for _, name := range req.Dependencies {
		if slices.ContainsFunc(r.Dependencies, func(d Dependency) bool { return d.Dependency == name }) {
			continue // named twice
		}
		row, ok := Lookup(name)
		d := Dependency{Dependency: name, InMatrix: ok, Obeyed: ok && row.Breaker, Platform: row.Platform, PlatformSignal: row.PlatformSignal}
		switch {
		case !ok:
			d.Note = "not in the degradation matrix: which tools it affects is unknown"
		case !row.Breaker:
			d.WhenDown = row.Effects
			d.Note = "no breaker in the data plane (LLD §1): no instance obeys this override, so no tool changes"
		default:
			d.Note = "every instance fails calls to " + name + " fast once it reads the override"
		}
		r.Dependencies = append(r.Dependencies, d)
		if !d.Obeyed {
			continue
		}
		for _, e := range row.Effects {
			switch c := worst[e.Tool]; {
			case c == nil || e.Behaviour.Worse(c.effect.Behaviour):
				worst[e.Tool] = &cause{effect: e, because: []string{name}}
			case e.Behaviour == c.effect.Behaviour:
				c.because = append(c.because, name)
			}
		}
	}
	for _, t := range tools {
		if c := worst[t.Name]; c != nil {
			r.Tools = append(r.Tools, ToolImpact{Tool: t.Name, Behaviour: c.effect.Behaviour, Detail: c.effect.Detail,
				Signal: c.effect.Signal, Because: c.because})
		}
	}
	return r
}

// Of is the impact of req, with each tool's and dependency's call rate
// read from src and the calls each behaviour touches over req.For. A nil
// src gives [Static]'s report. A source that cannot be read within
// [DefaultTimeout], or half the time ctx has left when that is less,
// leaves the static report, with the reason in Rates.Error: Of never
// fails, and never takes the whole of a caller's time.
func Of(ctx context.Context, req Request, src RateSource) Report {
	r := Static(req)
	if src == nil {
		return r
	}
	rates, err := ratesWithin(ctx, src, r.rateRequest(), readBound(ctx, time.Now()))
	if err != nil {
		r.RatesFailed(src.Describe(), err)
		return r
	}
	r.WithRates(rates)
	return r
}

// ratesWithin reads req's rates from src within bound; a read the bound
// ended says that the source did not answer within it.
func ratesWithin(ctx context.Context, src RateSource, req metrics.RateRequest, bound time.Duration) (metrics.CallRates, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	rates, err := src.Rates(ctx, req)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		err = fmt.Errorf("the source did not answer within %s: %w", human.Duration(bound.Round(time.Millisecond)), err)
	}
	return rates, err
}

// rateRequest names the rates r shows: its tools' and its dependencies'.
func (r Report) rateRequest() metrics.RateRequest {
	req := metrics.RateRequest{Tools: make([]string, len(r.Tools)), Dependencies: make([]string, len(r.Dependencies))}
	for i, t := range r.Tools {
		req.Tools[i] = t.Tool
	}
	for i, d := range r.Dependencies {
		req.Dependencies[i] = d.Dependency
	}
	return req
}

// RatesFailed records that the rates could not be read from source: the
// report stays the matrix's alone (no rate, no estimate) and says why.
func (r *Report) RatesFailed(source string, err error) {
	r.WithRates(metrics.CallRates{})
	r.Rates = &Rates{Source: source, Error: err.Error()}
}

// WithRates fills r's call rates and estimates from rates, read
// elsewhere (the dashboard reads them once for every dependency).
func (r *Report) WithRates(rates metrics.CallRates) {
	r.Rates = &Rates{Source: rates.Source, Method: rates.Method, WindowSeconds: rates.Window.Seconds(), ReadAt: rates.ReadAt,
		Warnings: rates.Warnings}
	for i := range r.Dependencies {
		d := &r.Dependencies[i]
		d.CallsPerMinute = nil
		if v, ok := rates.Dependencies[d.Dependency]; ok {
			d.CallsPerMinute = &v
		}
	}
	over := r.ForSeconds
	if over <= 0 {
		over = time.Hour.Seconds()
	}
	for i := range r.Tools {
		t := &r.Tools[i]
		t.CallsPerMinute, t.Estimate = nil, nil
		v, ok := rates.Tools[t.Tool]
		if !ok {
			continue
		}
		t.CallsPerMinute = &v
		if t.Behaviour == Unaffected || r.Clear {
			continue
		}
		calls := About(v * over / 60)
		t.Estimate = &Estimate{Calls: calls, OverSeconds: over,
			Text: estimateText(t.Tool, t.Behaviour, calls, v, over, r.ForSeconds > 0)}
	}
}

// About rounds an expected count as a person states one: to the nearest
// whole number below 100 (halves up), to two significant figures from 100
// on (750, 1200, 34000). A count that is not a finite positive number is
// 0; one past 9e18 is [math.MaxInt64].
func About(x float64) int64 {
	switch {
	case math.IsNaN(x) || x <= 0:
		return 0
	case x >= 9e18:
		return math.MaxInt64
	}
	unit := 1.0 // a power of ten, exact in a float64 up to 1e22
	for x/unit >= 100 {
		unit *= 10
	}
	return int64(math.Round(x/unit) * unit)
}

// estimateText says an estimate: "about 750 screenings deferred over
// 30m", "about 1200 disputes failed an hour until cleared".
func estimateText(tool string, b Behaviour, calls int64, perMinute, over float64, bounded bool) string {
	var t Tool // the design's tool of that name (its noun)
	if i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == tool }); i >= 0 {
		t = tools[i]
	}
	span := "over " + human.Duration(time.Duration(over*float64(time.Second)))
	if !bounded {
		span = "an hour until cleared"
	}
	switch {
	case perMinute == 0:
		return "no " + human.Plural(2, t.Noun) + " in the window: none expected to be " + string(b)
	case calls == 0:
		return "fewer than 1 " + t.Noun + " " + string(b) + " " + span
	}
	return "about " + strconv.FormatInt(calls, 10) + " " + human.Plural(calls, t.Noun) + " " + string(b) + " " + span
}
