package impact

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// DefaultShareFor is how long after a rate read an [Assessor] answers
// further asks from it, by default.
const DefaultShareFor = 30 * time.Second

// Assessor tells a lever change's impact ([lever.Assessor]): the matrix's
// for the dependencies the change forces or clears, with the call rates of
// the source Open opens. The command factory wires one per context, so
// every lever surface (a dry run, a protected context's prompt, a change
// request, an agent's proposal, the records) carries the same report.
//
// One rate read answers many changes. The source is opened once, and a
// read asks it for every tool and dependency the matrix names (and any
// other a change forces): a change assessed while that read is under
// way, or within ShareFor after it ended, is answered from it. So a
// command that assesses several changes (apply's windows, a drill's
// steps, an agent's proposals) reads the source once, not once a change:
// on Prometheus two scrapes 5 s apart, on CloudWatch one GetMetricData
// request. A read that failed is shared the same way, so a source that
// does not answer costs the bound once. Every report says when its rates
// were read (Rates.ReadAt).
//
// Use it by pointer; the zero value (no Open) tells the matrix's impact
// alone.
type Assessor struct {
	// Open opens the context's rate source; a nil source with a nil error
	// means none is named (the impact is the matrix's alone, without a
	// rates section). An error is a source that cannot be read: the impact
	// says why. Open is called once, by the first change assessed, and
	// what it returned is kept. Nil Open reads no rates.
	Open func(ctx context.Context) (RateSource, error)
	// Clock tells how long ago a read ended; default the wall clock.
	Clock clock.Clock
	// ShareFor is how long after a read ended its rates answer further
	// changes; default [DefaultShareFor].
	ShareFor time.Duration
	// Dependencies are read with the matrix's names (the context's known
	// dependencies, which a levers file's windows name), so a change
	// forcing one of them needs no read of its own; as many as one
	// CloudWatch request holds beside the names a change asks for.
	Dependencies []string

	mu     sync.Mutex
	opened bool
	src    RateSource
	err    error
	last   *sharedRead // the newest read: under way, or ended
}

// sharedRead is one read of a source's rates, shared by the changes it
// covers.
type sharedRead struct {
	req metrics.RateRequest // every name read

	done  chan struct{} // closed once the fields below are set
	rates metrics.CallRates
	err   error
	ended time.Time // on the Assessor's clock
	// warm marks a read no change asked for ([Assessor.Warm]): failed, it
	// is not shared.
	warm bool
}

var _ lever.Assessor = (*Assessor)(nil)

// Assess implements [lever.Assessor]: [Of] of f's dependencies, over f's
// duration, with the rates of a read it shares with the other changes
// assessed about then. It never fails, and waits for the rates no longer
// than [Of] bounds a read (past opening the source).
func (a *Assessor) Assess(ctx context.Context, f lever.Forces) lever.Impact {
	req := Request{Dependencies: f.Dependencies, For: f.For, Clear: f.Clear}
	src, err := a.Source(ctx) // nil: no source named, the matrix's impact alone
	if err != nil {
		r := Static(req)
		r.RatesFailed("the context's metrics source", err)
		return &r
	}
	r := Of(ctx, req, src)
	return &r
}

// source opens the rate source on the first call and returns what that
// opening returned ever after.
func (a *Assessor) source(ctx context.Context) (RateSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.opened {
		a.src, a.err = a.Open(ctx)
		a.opened = true
	}
	return a.src, a.err
}

// sharedSource reads src through its assessor's shared read: [Of] asks
// it as it would the source, and bounds and words the wait.
type sharedSource struct {
	a   *Assessor
	src RateSource
}

func (s sharedSource) Describe() string { return s.src.Describe() }

// Rates returns want's part of a read covering want: the newest read when
// it covers want and is under way or ended within ShareFor, else a new
// one, of want, every name the matrix has and every name the newest read
// covered (and the assessor's Dependencies). It waits until ctx ends; the
// read itself goes on (within [DefaultTimeout]) for the changes after.
func (s sharedSource) Rates(ctx context.Context, want metrics.RateRequest) (metrics.CallRates, error) {
	rd := s.read(ctx, want, false)
	select {
	case <-rd.done:
		if rd.err != nil {
			return metrics.CallRates{}, rd.err
		}
		return rd.rates.Narrow(want), nil
	case <-ctx.Done():
		return metrics.CallRates{}, fmt.Errorf("read call rates from %s: %w", s.src.Describe(), ctx.Err())
	}
}

// read returns the newest read when it covers want and is under way or
// ended within ShareFor, else starts a new one (warm: started before any
// change asked).
func (s sharedSource) read(ctx context.Context, want metrics.RateRequest, warm bool) *sharedRead {
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	rd := a.last
	if rd == nil || !rd.covers(want) || rd.stale(a.now(), a.shareFor()) {
		rd = newSharedRead(want, rd, a.Dependencies)
		rd.warm = warm
		a.last = rd
		go rd.run(context.WithoutCancel(ctx), s.src, a.now)
	}
	return rd
}

// Source returns the rate source the assessor reads, read through its
// shared read (what [Assessor.Assess] reads), opening it if no change has
// yet: a view that shows the rates as it changes levers (the dashboard's
// detail) shows the read its changes record. Nil with a nil error when no
// source is named; the error is Open's.
func (a *Assessor) Source(ctx context.Context) (RateSource, error) {
	if a == nil || a.Open == nil {
		return nil, nil
	}
	src, err := a.source(ctx)
	if err != nil || src == nil {
		return nil, err
	}
	return sharedSource{a: a, src: src}, nil
}

// Warm starts a read of every name the assessor reads, unless one is under
// way or ended within ShareFor, and returns at once: a view open before
// its first change (the dashboard on a Prometheus source, whose first read
// waits for two scrapes) has that change find a read under way or recent.
// A change still takes only rates read within ShareFor, and a warm read
// that failed answers no change: the change after it reads again. Without
// a source (none named, or one that cannot be opened) it does nothing.
func (a *Assessor) Warm(ctx context.Context) {
	src, _ := a.Source(ctx) // nil without a source, or with one that cannot be opened
	if s, ok := src.(sharedSource); ok {
		s.read(ctx, metrics.RateRequest{}, true)
	}
}

func (a *Assessor) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

func (a *Assessor) shareFor() time.Duration {
	if a.ShareFor <= 0 {
		return DefaultShareFor
	}
	return a.ShareFor
}

// newSharedRead is a read of want, of every tool and dependency the
// matrix names, of the names prev read and of also, as many of the last
// as one CloudWatch request holds.
func newSharedRead(want metrics.RateRequest, prev *sharedRead, also []string) *sharedRead {
	req := metrics.RateRequest{Tools: ToolNames()}
	for _, row := range matrix {
		req.Dependencies = append(req.Dependencies, row.Dependency)
	}
	add := func(to *[]string, names []string, limit int) {
		for _, n := range names {
			if len(req.Tools)+len(req.Dependencies) >= limit {
				return
			}
			if !slices.Contains(*to, n) {
				*to = append(*to, n)
			}
		}
	}
	add(&req.Tools, want.Tools, math.MaxInt)
	add(&req.Dependencies, want.Dependencies, math.MaxInt)
	if prev != nil {
		add(&req.Tools, prev.req.Tools, metrics.MaxQueriesPerRequest)
		add(&req.Dependencies, prev.req.Dependencies, metrics.MaxQueriesPerRequest)
	}
	add(&req.Dependencies, also, metrics.MaxQueriesPerRequest)
	return &sharedRead{req: req, done: make(chan struct{})}
}

// run reads the rates, within [DefaultTimeout].
func (rd *sharedRead) run(ctx context.Context, src RateSource, now func() time.Time) {
	rd.rates, rd.err = ratesWithin(ctx, src, rd.req, DefaultTimeout)
	rd.ended = now()
	close(rd.done)
}

// covers reports whether rd reads every name of want.
func (rd *sharedRead) covers(want metrics.RateRequest) bool {
	missingTool := func(t string) bool { return !slices.Contains(rd.req.Tools, t) }
	missingDependency := func(d string) bool { return !slices.Contains(rd.req.Dependencies, d) }
	return !slices.ContainsFunc(want.Tools, missingTool) && !slices.ContainsFunc(want.Dependencies, missingDependency)
}

// stale reports whether rd ended longer than shareFor before now, or is a
// warm read that failed.
func (rd *sharedRead) stale(now time.Time, shareFor time.Duration) bool {
	select {
	case <-rd.done:
		return now.Sub(rd.ended) > shareFor || (rd.warm && rd.err != nil)
	default:
		return false // under way
	}
}

var _ lever.Impact = (*Report)(nil)

// Record implements [lever.Impact]: dep's part of r, as the audit record
// of its force or clear keeps it (docs/contracts/audit-record.md, "The
// impact attribute"): the tools dep's row changes (when the fleet obeys
// its override) with their call rates, and dep's own. Nil for a
// dependency r does not name.
func (r *Report) Record(dep string) *audit.Impact {
	i := slices.IndexFunc(r.Dependencies, func(d Dependency) bool { return d.Dependency == dep })
	if i < 0 {
		return nil
	}
	d := r.Dependencies[i]
	out := &audit.Impact{Dependency: dep, Obeyed: d.Obeyed, Tools: []audit.ToolRate{}, CallsPerMinute: d.CallsPerMinute}
	if row, ok := Lookup(dep); ok && d.Obeyed {
		for _, e := range row.Effects {
			tr := audit.ToolRate{Tool: e.Tool, Behaviour: string(e.Behaviour)}
			if t := slices.IndexFunc(r.Tools, func(t ToolImpact) bool { return t.Tool == e.Tool }); t >= 0 {
				tr.CallsPerMinute = r.Tools[t].CallsPerMinute
			}
			out.Tools = append(out.Tools, tr)
		}
	}
	if rt := r.Rates; rt != nil {
		out.RatesSource, out.RatesError, out.ReadAt, out.WindowSeconds = rt.Source, rt.Error, rt.ReadAt, rt.WindowSeconds
	}
	return out
}
