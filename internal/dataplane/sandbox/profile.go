package sandbox

import (
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
)

// The built-in downstream profiles.
const (
	// ProfileHealthy: realistic latency, no errors. Breakers stay closed
	// until an operator or a chaos header intervenes.
	ProfileHealthy = "healthy"
	// ProfileFlaky: a few percent of errors everywhere and periodic
	// outages (openai errors, screening-sim hangs, core-api slows past its
	// attempt cap), so breakers open, probe and close on their own.
	ProfileFlaky = "flaky"
	// ProfileDegraded: openai down, screening-sim failing a third of its
	// calls: the degradation matrix all the time.
	ProfileDegraded = "degraded"
	// ProfileInstant: no latency, no errors; for benchmarks of the gateway
	// path itself.
	ProfileInstant = "instant"
)

// ProfileInfo names and describes a built-in profile.
type ProfileInfo struct {
	Name, Description string
}

// Profiles lists the built-in profiles.
func Profiles() []ProfileInfo {
	return []ProfileInfo{
		{ProfileHealthy, "realistic latency, no errors"},
		{ProfileFlaky, "a few % errors and periodic outages: breakers open and close on their own"},
		{ProfileDegraded, "openai down, screening-sim failing 30% of calls"},
		{ProfileInstant, "no latency, no errors (benchmarks)"},
	}
}

// ProfileNames returns the built-in profile names, for flag help.
func ProfileNames() []string {
	var names []string
	for _, p := range Profiles() {
		names = append(names, p.Name)
	}
	return names
}

// healthyLatency are the downstreams' latencies in the healthy profile. The
// LLD's example has OpenAI answer in 1.1 s and PostgreSQL in 80 ms; medians
// are lower, tails near those.
var healthyLatency = map[string]Latency{
	CoreAPI:      {P50: 15 * time.Millisecond, P99: 60 * time.Millisecond},
	OpenAI:       {P50: 150 * time.Millisecond, P99: 900 * time.Millisecond},
	Postgres:     {P50: 8 * time.Millisecond, P99: 80 * time.Millisecond},
	ScreeningSim: {P50: 60 * time.Millisecond, P99: 300 * time.Millisecond},
}

// Profile returns a fresh copy of the named built-in profile.
func Profile(name string) (map[string]DownstreamProfile, error) {
	out := map[string]DownstreamProfile{}
	for _, dep := range Downstreams() {
		out[dep] = DownstreamProfile{Latency: healthyLatency[dep]}
	}
	set := func(dep string, f func(*DownstreamProfile)) {
		p := out[dep]
		f(&p)
		out[dep] = p
	}
	switch name {
	case ProfileHealthy:
	case ProfileInstant:
		for _, dep := range Downstreams() {
			out[dep] = DownstreamProfile{}
		}
	case ProfileFlaky:
		set(CoreAPI, func(p *DownstreamProfile) {
			p.ErrorRate = 0.01
			// Slower than the 2 s attempt cap: timeouts, retries, and the
			// core-api breaker (20 calls, min 10) opening at enough traffic.
			p.Outages = []Outage{{Every: 4 * time.Minute, For: 20 * time.Second, Offset: 150 * time.Second, Fault: chaos.FaultLatency, Ms: 2500}}
		})
		set(OpenAI, func(p *DownstreamProfile) {
			p.ErrorRate = 0.03
			p.Outages = []Outage{{Every: 2 * time.Minute, For: 40 * time.Second, Offset: 20 * time.Second, Fault: chaos.FaultError}}
		})
		set(Postgres, func(p *DownstreamProfile) { p.ErrorRate = 0.005 })
		set(ScreeningSim, func(p *DownstreamProfile) {
			p.ErrorRate = 0.05
			p.Outages = []Outage{{Every: 3 * time.Minute, For: 45 * time.Second, Offset: 70 * time.Second, Fault: chaos.FaultTimeout}}
		})
	case ProfileDegraded:
		set(OpenAI, func(p *DownstreamProfile) { p.ErrorRate = 1 })
		set(ScreeningSim, func(p *DownstreamProfile) { p.ErrorRate = 0.3 })
	default:
		return nil, fmt.Errorf("%w: unknown profile %q: use one of %s", ErrInvalidConfig, name, strings.Join(ProfileNames(), ", "))
	}
	return out, nil
}
