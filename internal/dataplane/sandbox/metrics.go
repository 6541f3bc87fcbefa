package sandbox

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/exposition"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/gauge"
)

// Outcomes of one logical downstream call, the outcome label of
// kosha_downstream_calls_total.
const (
	OutcomeSuccess     = "success"
	OutcomeError       = "error"        // a 5xx answer
	OutcomeClientError = "client_error" // a 4xx answer (a success for the breaker)
	OutcomeTimeout     = "timeout"      // the attempt's timeout or the deadline cut it
	OutcomeConnError   = "conn_error"   // connection refused or reset
	OutcomeCircuitOpen = "circuit_open" // the breaker refused it
	OutcomeBulkhead    = "bulkhead_full"
	OutcomeDeadline    = "deadline_exceeded" // the budget was spent before it started
	OutcomeCanceled    = "canceled"
)

var callOutcomes = []string{OutcomeSuccess, OutcomeError, OutcomeClientError, OutcomeTimeout, OutcomeConnError,
	OutcomeCircuitOpen, OutcomeBulkhead, OutcomeDeadline, OutcomeCanceled}

// Shed reasons, the reason label of kosha_shed_total (LLD §7).
const (
	ShedInFlight       = "in_flight"       // more than MAX_IN_FLIGHT requests on the instance
	ShedMinBudget      = "min_budget"      // remaining budget below the tool's minimum
	ShedDependencyOpen = "dependency_open" // the tool's only dependency's breaker is open
)

// Ignored reasons, the reason label of kosha_chaos_ignored_total: the
// verifier's checks plus the gateway's own.
const (
	IgnoredDisabled = "disabled" // chaos is not enabled
	IgnoredRole     = "role"     // the principal is not an operator
	IgnoredKeyring  = "keyring"  // the keys could not be read
)

func ignoredReasons() []string {
	out := []string{IgnoredDisabled, IgnoredRole, IgnoredKeyring}
	for _, c := range chaos.Checks() {
		out = append(out, string(c))
	}
	return out
}

// callOutcome labels a logical call's result.
func callOutcome(err error) string {
	if err == nil {
		return OutcomeSuccess
	}
	switch resilience.KindOf(err) {
	case resilience.KindCircuitOpen:
		return OutcomeCircuitOpen
	case resilience.KindBulkheadFull:
		return OutcomeBulkhead
	case resilience.KindDeadlineExceeded:
		return OutcomeDeadline
	case resilience.KindAttemptTimeout:
		return OutcomeTimeout
	default: // not a layer's refusal: classify the dependency's answer below
	}
	var se *resilience.StatusError
	var ce *resilience.ConnError
	switch {
	case errors.As(err, &se):
		if se.Code < 500 {
			return OutcomeClientError
		}
		return OutcomeError
	case errors.As(err, &ce):
		return OutcomeConnError
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	}
	return OutcomeError
}

// depCounters are one dependency's pre-resolved call counters.
type depCounters struct {
	outcomes map[string]*exposition.Counter
	retries  *exposition.Counter
}

// metrics are the sandbox's Prometheus metrics.
type metrics struct {
	reg          *exposition.Registry
	calls        *exposition.CounterVec
	retries      *exposition.CounterVec
	deps         map[string]*depCounters
	shed         *exposition.CounterVec
	rateLimited  *exposition.PlainCounter
	rateDecision *exposition.CounterVec
	chaosFaults  *exposition.CounterVec
	simFaults    *exposition.CounterVec
	ignored      *exposition.CounterVec
	honored      *exposition.CounterVec
	toolCalls    *exposition.CounterVec
	toolDuration *exposition.HistogramVec
	requests     *exposition.CounterVec
	auditDropped *exposition.PlainCounter
	auditFailed  *exposition.PlainCounter
	auditSummed  *exposition.PlainCounter
	trafficSent  *exposition.PlainCounter
	trafficDrop  *exposition.PlainCounter
	tools        map[string]*toolCounters
	reqs         sync.Map // requestKey → *exposition.Counter
}

func newMetrics(reg *exposition.Registry) (*metrics, error) {
	m := &metrics{
		reg: reg,
		calls: exposition.NewCounterVec(gauge.DownstreamCallsPrometheusName,
			"Logical downstream calls (retries included in one call) by dependency and outcome.", gauge.DimDependency, gauge.DimOutcome),
		retries: exposition.NewCounterVec("kosha_retries_total", "Attempts after the first, by dependency.", "dependency"),
		shed: exposition.NewCounterVec("kosha_shed_total",
			"Requests and tool calls shed by the load shedder, by reason (in_flight, min_budget, dependency_open).", "reason"),
		rateLimited: exposition.NewCounter("kosha_rate_limited_total", "Requests refused by the per-client rate limit."),
		rateDecision: exposition.NewCounterVec("kosha_rate_limit_decisions_total",
			"Rate-limit takes by outcome (admitted, denied, denied_contention, fail_open_error).", "outcome"),
		chaosFaults: exposition.NewCounterVec("kosha_chaos_faults_total",
			"Chaos faults injected into downstream attempts, by target, fault and source (header or admin knob).", "target", "fault", "source"),
		simFaults: exposition.NewCounterVec("kosha_simulated_faults_total",
			"Faults the downstream profiles injected (random rates and periodic outages).", "dependency", "fault", "source"),
		ignored: exposition.NewCounterVec("kosha_chaos_ignored_total",
			"Chaos headers ignored, by reason (disabled, role, or the first failed check).", "reason"),
		honored: exposition.NewCounterVec("kosha_chaos_honored_total",
			"Requests whose chaos header was honored, by target and fault.", "target", "fault"),
		toolCalls: exposition.NewCounterVec(gauge.ToolCallsPrometheusName,
			"Tool calls by tool and outcome (ok, degraded, deferred, or the error code).", gauge.DimTool, gauge.DimOutcome),
		toolDuration: exposition.NewHistogramVec("kosha_tool_call_duration_seconds", "Tool call latency inside the gateway.",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "tool"),
		requests: exposition.NewCounterVec("kosha_requests_total",
			"HTTP requests to the tool endpoint by instance and status code.", "instance", "code"),
		auditDropped: exposition.NewCounter("kosha_audit_dropped_total",
			"Audit records dropped because the audit queue was full."),
		auditFailed: exposition.NewCounter("kosha_audit_write_errors_total", "Audit records the store refused."),
		auditSummed: exposition.NewCounter("kosha_audit_suppressed_total",
			"Ignored chaos headers counted into a summary record instead of a record of their own."),
		trafficSent: exposition.NewCounter("kosha_traffic_requests_total", "Requests the synthetic traffic generator sent."),
		trafficDrop: exposition.NewCounter("kosha_traffic_dropped_total",
			"Arrivals the traffic generator dropped because too many of its requests were in flight."),
	}
	if err := reg.Register(m.calls, m.retries, m.shed, m.rateLimited, m.rateDecision, m.chaosFaults, m.simFaults,
		m.ignored, m.honored, m.toolCalls, m.toolDuration, m.requests, m.auditDropped, m.auditFailed, m.auditSummed,
		m.trafficSent, m.trafficDrop); err != nil {
		return nil, err
	}
	// Series that exist from the start read 0 rather than "no data".
	m.deps = map[string]*depCounters{}
	for _, dep := range Downstreams() {
		dc := &depCounters{outcomes: map[string]*exposition.Counter{}, retries: m.retries.WithLabelValues(dep)}
		for _, o := range callOutcomes {
			dc.outcomes[o] = m.calls.WithLabelValues(dep, o)
		}
		m.deps[dep] = dc
	}
	m.tools = map[string]*toolCounters{}
	for _, t := range Tools() {
		m.tools[t] = &toolCounters{duration: m.toolDuration.WithLabelValues(t), ok: m.toolCalls.WithLabelValues(t, ToolOK)}
	}
	for _, r := range []string{ShedInFlight, ShedMinBudget, ShedDependencyOpen} {
		m.shed.WithLabelValues(r)
	}
	for _, r := range ignoredReasons() {
		m.ignored.WithLabelValues(r)
	}
	for _, o := range []limiter.Outcome{limiter.OutcomeAdmitted, limiter.OutcomeDenied, limiter.OutcomeDeniedContention,
		limiter.OutcomeFailOpenError} {
		m.rateDecision.WithLabelValues(o.String())
	}
	return m, nil
}

// toolCounters are one tool's pre-resolved series.
type toolCounters struct {
	duration *exposition.Histogram
	ok       *exposition.Counter
}

type requestKey struct {
	instance string
	code     int
}

// observeTool counts one tool call and its latency.
func (m *metrics) observeTool(tool, outcome string, d time.Duration) {
	tc := m.tools[tool]
	if tc == nil {
		return
	}
	tc.duration.Observe(d.Seconds())
	if outcome == ToolOK {
		tc.ok.Inc()
		return
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
}

// observeRequest counts one request by instance and status, resolving each
// series once.
func (m *metrics) observeRequest(instance string, code int) {
	k := requestKey{instance, code}
	if c, ok := m.reqs.Load(k); ok {
		c.(*exposition.Counter).Inc()
		return
	}
	c, _ := m.reqs.LoadOrStore(k, m.requests.WithLabelValues(instance, strconv.Itoa(code)))
	c.(*exposition.Counter).Inc()
}

// observeFault counts a simulator's fault under the chaos or the simulated
// counter, by source.
func (m *metrics) observeFault(dep string, f chaos.Fault, source string) {
	if source == sourceHeader || source == sourceAdmin {
		m.chaosFaults.WithLabelValues(dep, f.String(), source).Inc()
		return
	}
	m.simFaults.WithLabelValues(dep, f.String(), source).Inc()
}

// ObserveTake implements limiter.Observer.
func (m *metrics) ObserveTake(_ string, d limiter.Decision) {
	m.rateDecision.WithLabelValues(d.Outcome.String()).Inc()
}

var _ limiter.Observer = (*metrics)(nil)

// handler serves the registry in the Prometheus text format (or the one a
// scraper negotiates).
func (m *metrics) handler() http.Handler { return m.reg.Handler() }

// fleetCollector reports per-instance state at scrape time: the
// breaker_state gauge (reading each breaker, so an open breaker whose open
// duration has passed reports half-open), in-flight requests and failed
// override reads.
type fleetCollector struct {
	fleet    *Fleet
	clock    clock.Clock
	state    *exposition.Desc
	frozen   *exposition.Desc
	inFlight *exposition.Desc
	readErrs *exposition.Desc
	deps     []string
}

func newFleetCollector(f *Fleet, clk clock.Clock) *fleetCollector {
	var deps []string
	for _, d := range f.instances[0].reg.Dependencies() {
		if d.Breaker != nil {
			deps = append(deps, d.Name)
		}
	}
	slices.Sort(deps)
	return &fleetCollector{
		fleet: f,
		clock: clk,
		deps:  deps,
		frozen: exposition.NewGaugeDesc(freeze.PrometheusMetricName,
			"1 while the instance ignores every chaos header because of the fleet's freeze (frozen, or the freeze item unread for 15 s), else 0.",
			gauge.DimInstance),
		state: exposition.NewGaugeDesc(gauge.PrometheusMetricName,
			"Circuit breaker state per dependency and instance: 0 closed, 1 half-open, 2 open, 3 forced open.",
			gauge.DimDependency, gauge.DimInstance),
		inFlight: exposition.NewGaugeDesc("kosha_in_flight_requests",
			"Requests in flight per instance (shed above max in flight).", gauge.DimInstance),
		readErrs: exposition.NewCounterDesc("kosha_breaker_override_read_errors_total",
			"Failed reads of the breaker override (while it grows, overrides are not applied).",
			gauge.DimDependency, gauge.DimInstance),
	}
}

// collector is the registry's view of c.
func (c *fleetCollector) collector() *exposition.Func {
	return exposition.NewFunc(c.collect, c.state, c.frozen, c.inFlight, c.readErrs)
}

// collect reports every instance's series.
func (c *fleetCollector) collect(emit exposition.Emit) {
	now := c.clock.Now()
	for _, in := range c.fleet.instances {
		frozen := 0.0
		if in.ChaosFrozen(now) {
			frozen = 1
		}
		emit(c.frozen, frozen, in.name)
		for _, dep := range c.deps {
			emit(c.state, float64(in.BreakerState(dep)), dep, in.name)
			emit(c.readErrs, float64(in.overrideReadErrors(dep)), dep, in.name)
		}
		emit(c.inFlight, float64(in.Shedder().InFlight()), in.name)
	}
}
