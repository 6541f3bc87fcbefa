package sandbox

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// Status is what GET /status answers: the fleet as the gateway sees it.
// `koshactl sandbox status` prints it.
type Status struct {
	StartedAt    time.Time `json:"started_at"`
	Now          time.Time `json:"now"`
	Context      string    `json:"context,omitempty"`
	Store        string    `json:"store"`
	Profile      string    `json:"profile"`
	TimeScale    float64   `json:"time_scale"`
	ChaosEnabled bool      `json:"chaos_enabled"`
	// OverrideRefreshMs and OverridePollMs are the override cache period and
	// the idle instances' poll, in sandbox time.
	OverrideRefreshMs int64              `json:"override_refresh_ms"`
	OverridePollMs    int64              `json:"override_poll_ms"`
	Dependencies      []string           `json:"dependencies"`
	Instances         []InstanceStatus   `json:"instances"`
	Downstreams       []DownstreamStatus `json:"downstreams"`
	Outbox            OutboxStats        `json:"outbox"`
	Deferred          uint64             `json:"deferred_screenings"`
	Traffic           TrafficStatus      `json:"traffic"`
}

// InstanceStatus is one instance's breakers and load.
type InstanceStatus struct {
	Name        string `json:"name"`
	InFlight    int    `json:"in_flight"`
	MaxInFlight int    `json:"max_in_flight"`
	Served      uint64 `json:"served"`
	// ChaosFrozen is the chaos_frozen gauge: the instance ignores every
	// chaos header because of the fleet's freeze.
	ChaosFrozen bool `json:"chaos_frozen"`
	// Freeze says what the instance last read of the freeze item, when it
	// read one (docs/contracts/freeze.md).
	Freeze   string          `json:"freeze,omitempty"`
	Breakers []BreakerStatus `json:"breakers"`
}

// BreakerStatus is one breaker on one instance.
type BreakerStatus struct {
	Dependency string `json:"dependency"`
	State      string `json:"state"`
	// Value is the breaker_state gauge value.
	Value           int     `json:"value"`
	WindowCalls     int     `json:"window_calls"`
	WindowFailures  int     `json:"window_failures"`
	FailureRate     float64 `json:"failure_rate"`
	RemainingOpenMs int64   `json:"remaining_open_ms,omitempty"`
	OverrideReason  string  `json:"override_reason,omitempty"`
	ReadErrors      uint64  `json:"override_read_errors,omitempty"`
}

// DownstreamStatus is one simulator's profile and knob.
type DownstreamStatus struct {
	Name     string  `json:"name"`
	Calls    uint64  `json:"calls"`
	Failures uint64  `json:"failures"`
	Outage   bool    `json:"outage"`
	Knob     *Knob   `json:"knob,omitempty"`
	P50Ms    float64 `json:"latency_p50_ms"`
	P99Ms    float64 `json:"latency_p99_ms"`
}

// TrafficStatus is the generator's settings.
type TrafficStatus struct {
	RPS     float64 `json:"rps"`
	Clients int     `json:"clients"`
}

// status builds the current Status.
func (s *Server) status() Status {
	now := s.deps.Clock.Now()
	st := Status{
		StartedAt: s.started.UTC(), Now: now.UTC(), Context: s.deps.ContextName, Store: s.deps.Store.Describe(),
		Profile: s.cfg.Profile, TimeScale: s.cfg.TimeScale, ChaosEnabled: s.cfg.ChaosEnabled,
		OverrideRefreshMs: s.cfg.OverrideRefresh.Milliseconds(), OverridePollMs: s.cfg.OverridePoll.Milliseconds(),
		Dependencies: s.collector.deps, Outbox: s.gw.outbox.Stats(), Deferred: s.gw.deferred.count(),
		Traffic: TrafficStatus{RPS: s.cfg.Traffic.RPS, Clients: len(s.traffic.tokens)},
	}
	for _, in := range s.fleet.instances {
		is := InstanceStatus{Name: in.name, InFlight: in.Shedder().InFlight(), MaxInFlight: in.Shedder().MaxInFlight(), Served: in.Served(),
			ChaosFrozen: in.ChaosFrozen(now)}
		if in.control != nil {
			if f := in.control.snapshot().Freeze; f != nil {
				is.Freeze = f.Describe(now)
			}
		}
		for _, dep := range s.collector.deps {
			d, _ := in.reg.Dependency(dep)
			snap := d.Breaker.Snapshot()
			bs := BreakerStatus{Dependency: dep, State: snap.State.String(), Value: int(snap.State), WindowCalls: snap.Calls,
				WindowFailures: snap.Failures, FailureRate: snap.FailureRate, RemainingOpenMs: snap.RemainingOpen.Milliseconds()}
			if d.Force != nil {
				bs.ReadErrors = d.Force.ReadErrors()
				if snap.State == circuit.ForcedOpen {
					bs.OverrideReason = d.Force.Last().Reason
				}
			}
			is.Breakers = append(is.Breakers, bs)
		}
		st.Instances = append(st.Instances, is)
	}
	for _, name := range Simulators() {
		sim := s.sims.get(name)
		ds := DownstreamStatus{Name: name, Calls: sim.Calls(), Failures: sim.Failures(),
			P50Ms: float64(sim.profile.Latency.P50) / 1e6, P99Ms: float64(sim.profile.Latency.P99) / 1e6}
		_, ds.Outage = sim.OutageActive(now)
		if k, ok := sim.Knob(); ok {
			ds.Knob = &k
		}
		st.Downstreams = append(st.Downstreams, ds)
	}
	return st
}
