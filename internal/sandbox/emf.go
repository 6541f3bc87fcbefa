package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	gauges "github.com/kosha-platform/koshactl/internal/metrics"
)

// emfQueue is how many gauge points may wait for the EMF file.
const emfQueue = 4096

// emfDimensions are the dimension sets of every line: the fleet series
// (dependency; dependency and service) and the per-instance series
// (dependency and instance; all three), so the CloudWatch reader finds them
// whether or not it filters by service (docs/sandbox.md).
var emfDimensions = [][]string{
	{gauges.DimDependency},
	{gauges.DimDependency, gauges.DimService},
	{gauges.DimDependency, gauges.DimInstance},
	{gauges.DimDependency, gauges.DimService, gauges.DimInstance},
}

type emfPoint struct {
	at         time.Time
	dependency string
	instance   string
	state      breaker.State
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
	interval  time.Duration
	clock     clock.Clock
	logger    *slog.Logger

	ch      chan emfPoint
	dropped atomic.Uint64
	mu      sync.Mutex
	closed  bool
}

func newEMFWriter(w io.Writer, s EMFSettings, clk clock.Clock, logger *slog.Logger) *emfWriter {
	ns := s.Namespace
	if ns == "" {
		ns = gauges.DefaultNamespace
	}
	return &emfWriter{w: w, namespace: ns, service: s.Service, interval: s.Interval, clock: clk, logger: logger,
		ch: make(chan emfPoint, emfQueue)}
}

// emfLine is one EMF document.
type emfLine struct {
	AWS          emfMeta `json:"_aws"`
	Dependency   string  `json:"dependency"`
	Service      string  `json:"service"`
	Instance     string  `json:"instance"`
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
func (e *emfWriter) transition(instance string, t breaker.Transition) {
	e.point(emfPoint{at: t.At, dependency: t.Name, instance: instance, state: t.To})
}

// run writes queued points, and every interval the whole fleet, until ctx
// ends; then it writes what is queued and returns.
func (e *emfWriter) run(ctx context.Context, f *Fleet, wg *sync.WaitGroup) {
	snapshot := func() {
		now := e.clock.Now()
		for _, in := range f.instances {
			for _, d := range in.reg.Dependencies() {
				if d.Breaker != nil {
					e.point(emfPoint{at: now, dependency: d.Name, instance: in.name, state: d.Breaker.State()})
				}
			}
		}
	}
	wg.Go(func() {
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
					e.write(p)
				}
				return
			case <-t.C:
				snapshot()
			case p := <-e.ch:
				e.write(p)
			}
		}
	})
}

func (e *emfWriter) write(p emfPoint) {
	line := emfLine{
		AWS: emfMeta{Timestamp: p.at.UnixMilli(), CloudWatchMetrics: []emfDirective{{Namespace: e.namespace,
			Dimensions: emfDimensions, Metrics: []emfMetric{{Name: gauges.MetricName, Unit: "None"}}}}},
		Dependency: p.dependency, Service: e.service, Instance: p.instance, BreakerState: int(p.state), State: p.state.String(),
	}
	b, err := json.Marshal(line)
	if err == nil {
		_, err = e.w.Write(append(b, '\n'))
	}
	if err != nil {
		e.logger.Warn("emf line not written", slog.String("event", "emf_write_failed"), slog.String("error", err.Error()))
	}
}
