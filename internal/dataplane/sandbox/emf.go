package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/gauge"
)

// emfQueue is how many gauge points may wait for the EMF file.
const emfQueue = 4096

// emfDrain is how long, once the shutdown begins, the EMF lines still
// queued may take to reach the file. A pipe whose reader stopped reading
// holds a write forever: past this the rest are given up (and counted), so
// the audit flush after it keeps its share of the shutdown's time.
const emfDrain = time.Second

// emfDimensions are the dimension sets of a line whose values are all
// usable (the metric contract, docs/contracts/breaker-state-metric.md): the
// fleet sets (dependency; dependency and service), each one custom metric
// per dependency, and, only when asked for, the one instance-level set
// (dependency, service, instance), one custom metric per instance and
// dependency. Without it the instance is a log property: it stays in the
// log event for Logs Insights and costs no metric.
func emfDimensions(service, instance string, withInstance bool) [][]string {
	sets := [][]string{{gauge.DimDependency}}
	if gauge.DimensionValue(service) {
		sets = append(sets, []string{gauge.DimDependency, gauge.DimService})
		if withInstance && gauge.DimensionValue(instance) {
			sets = append(sets, []string{gauge.DimDependency, gauge.DimService, gauge.DimInstance})
		}
	}
	return sets
}

type emfPoint struct {
	at         time.Time
	dependency string
	instance   string
	state      circuit.State
	// freeze marks a chaos_frozen point (no dependency): frozen is its value.
	freeze bool
	frozen bool
}

// emfWriter writes the breaker_state gauge as CloudWatch embedded metric
// format lines, one JSON object per line: on every state change and, for
// every instance and dependency, every interval, so the production metric
// shape is visible without AWS. Writes happen on its own goroutine; the
// breaker's hook only enqueues.
type emfWriter struct {
	w         io.Writer
	namespace string
	service   string
	instances bool
	interval  time.Duration
	clock     clock.Clock
	logger    *slog.Logger

	ch      chan emfPoint
	dropped atomic.Uint64
	mu      sync.Mutex
	closed  bool

	drain    time.Duration // see emfDrain
	done     chan struct{} // closed when run's goroutine returns
	lossOnce sync.Once     // the shutdown's loss is reported in one line
}

func newEMFWriter(w io.Writer, s EMFSettings, clk clock.Clock, logger *slog.Logger) *emfWriter {
	ns := s.Namespace
	if ns == "" {
		ns = gauge.DefaultNamespace
	}
	return &emfWriter{w: w, namespace: ns, service: s.Service, instances: s.InstanceDimension, interval: s.Interval, clock: clk, logger: logger,
		ch: make(chan emfPoint, emfQueue), drain: emfDrain, done: make(chan struct{})}
}

// emfLine is one EMF document.
type emfLine struct {
	AWS          emfMeta `json:"_aws"`
	Dependency   string  `json:"dependency"`
	Service      string  `json:"service,omitempty"`
	Instance     string  `json:"instance,omitempty"`
	BreakerState int     `json:"breaker_state"`
	// State is the state's name, a property (not a metric) for log readers.
	State string `json:"state"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// point enqueues one gauge value without blocking.
func (e *emfWriter) point(p emfPoint) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	select {
	case e.ch <- p:
	default:
		e.dropped.Add(1)
	}
}

// transition is the breakers' OnStateChange hook.
func (e *emfWriter) transition(instance string, t circuit.Transition) {
	e.point(emfPoint{at: t.At, dependency: t.Name, instance: instance, state: t.To})
}

// freezeChange is the instances' hook for a change of their chaos_frozen
// value.
func (e *emfWriter) freezeChange(instance string, frozen bool, at time.Time) {
	e.point(emfPoint{at: at, instance: instance, freeze: true, frozen: frozen})
}

// run writes queued points, and every interval the whole fleet, until ctx
// ends; then it writes what is queued within the drain time and returns.
// When ctx ends, a writer with write deadlines (a pipe, a regular file) gets
// one drain time ahead, so a write a stalled reader holds up (the one in
// flight, or the next) fails then instead of never; the first failed write
// of the drain gives up the rest, reported in one line.
func (e *emfWriter) run(ctx context.Context, f *Fleet) {
	snapshot := func() {
		now := e.clock.Now()
		for _, in := range f.instances {
			for _, d := range in.reg.Dependencies() {
				if d.Breaker != nil {
					e.point(emfPoint{at: now, dependency: d.Name, instance: in.name, state: d.Breaker.State()})
				}
			}
			e.point(emfPoint{at: now, instance: in.name, freeze: true, frozen: in.ChaosFrozen(now)})
		}
	}
	if dl, ok := e.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		// A file whose kind has no deadlines answers os.ErrNoDeadline: its
		// blocked write is left to finish (see finish).
		context.AfterFunc(ctx, func() { _ = dl.SetWriteDeadline(time.Now().Add(e.drain)) })
	}
	go func() {
		defer close(e.done)
		lost := 0 // lines a write failed on after ctx ended
		t := time.NewTicker(e.interval)
		defer t.Stop()
		snapshot()
		for {
			select {
			case <-ctx.Done():
				snapshot()
				e.mu.Lock()
				e.closed = true
				close(e.ch)
				e.mu.Unlock()
				for p := range e.ch {
					if err := e.write(p); err != nil {
						e.reportLoss(lost+1+len(e.ch), err)
						return
					}
				}
				if lost > 0 {
					e.reportLoss(lost, os.ErrDeadlineExceeded)
				}
				return
			case <-t.C:
				snapshot()
			case p := <-e.ch:
				if err := e.write(p); err != nil && ctx.Err() != nil {
					lost++ // the drain's deadline ended a write in flight
				} else if err != nil {
					e.logger.Warn("emf line not written", slog.String("event", "emf_write_failed"), slog.String("error", err.Error()))
				}
			}
		}
	}()
}

// finish waits, within ctx and a little over the drain time, for run's
// goroutine to write what was queued when the shutdown began. A write that
// no deadline ends (a pipe or device without them, whose reader stopped)
// is abandoned: the loss is reported and the shutdown goes on.
func (e *emfWriter) finish(ctx context.Context) {
	t := time.NewTimer(2 * e.drain)
	defer t.Stop()
	select {
	case <-e.done:
		return
	case <-ctx.Done():
	case <-t.C:
	}
	e.reportLoss(len(e.ch)+1, errors.New("a write is still blocked: the reader stopped reading"))
}

// reportLoss logs, once, that n EMF lines were given up at shutdown.
func (e *emfWriter) reportLoss(n int, err error) {
	e.lossOnce.Do(func() {
		e.logger.Warn(fmt.Sprintf("emf: %d lines not written at shutdown (is the file's reader still reading?); the shutdown goes on without them", n),
			slog.String("event", "emf_lines_lost"), slog.Int("lines", n), slog.String("error", err.Error()))
	})
}

// freezeLine is one EMF document of the chaos_frozen gauge.
type freezeLine struct {
	AWS         emfMeta `json:"_aws"`
	Service     string  `json:"service,omitempty"`
	Instance    string  `json:"instance,omitempty"`
	ChaosFrozen int     `json:"chaos_frozen"`
}

// freezeDimensions are the chaos_frozen gauge's dimension sets
// (docs/contracts/freeze.md): the service when the publisher names one
// (and the service with the instance when asked for the instance-level
// set), else the empty set, one metric for the fleet.
func freezeDimensions(service, instance string, withInstance bool) [][]string {
	if !gauge.DimensionValue(service) {
		return [][]string{{}}
	}
	sets := [][]string{{gauge.DimService}}
	if withInstance && gauge.DimensionValue(instance) {
		sets = append(sets, []string{gauge.DimService, gauge.DimInstance})
	}
	return sets
}

// write writes p's line. A line that cannot be published is skipped with a
// warning, not an error.
func (e *emfWriter) write(p emfPoint) error {
	if p.freeze {
		v := 0
		if p.frozen {
			v = 1
		}
		b, err := json.Marshal(freezeLine{AWS: emfMeta{Timestamp: p.at.UnixMilli(), CloudWatchMetrics: []emfDirective{{Namespace: e.namespace,
			Dimensions: freezeDimensions(e.service, p.instance, e.instances), Metrics: []emfMetric{{Name: freeze.MetricName, Unit: "None"}}}}},
			Service: e.service, Instance: p.instance, ChaosFrozen: v})
		if err != nil {
			return err
		}
		_, err = e.w.Write(append(b, '\n'))
		return err
	}
	if !gauge.DimensionValue(p.dependency) {
		// Every set carries the dependency: without a usable one the line
		// would publish nothing, or a series no reader asks for.
		e.logger.Warn("emf line not written: unusable dependency dimension", slog.String("event", "emf_bad_dimension"),
			slog.String("dependency", p.dependency), slog.String("instance", p.instance))
		return nil
	}
	line := emfLine{
		AWS: emfMeta{Timestamp: p.at.UnixMilli(), CloudWatchMetrics: []emfDirective{{Namespace: e.namespace,
			Dimensions: emfDimensions(e.service, p.instance, e.instances), Metrics: []emfMetric{{Name: gauge.MetricName, Unit: "None"}}}}},
		Dependency: p.dependency, Service: e.service, Instance: p.instance, BreakerState: int(p.state), State: p.state.String(),
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = e.w.Write(append(b, '\n'))
	return err
}
