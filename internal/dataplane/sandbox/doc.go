// Package sandbox provides the local gateway fleet koshactl runs for
// practice, drills and CI: N gateway instances in one process, each built
// from the rest of the reference data plane (internal/dataplane/circuit,
// limiter and resilience), serving the LLD's MCP tools over one HTTP
// address, in front of simulated downstreams, with Prometheus metrics and a
// synthetic traffic generator.
//
// # Pieces
//
//   - [Config] holds every setting, in LLD time: [DefaultConfig] is the
//     design's defaults, [Config.TimeScale] runs every duration faster (tests
//     and quick drills), and [Config.LoadFile] reads a YAML file over it.
//   - [New] builds a [Server] from a Config and its [Deps] (the context's
//     store, a clock, the chaos keys, the audit log, a logger, a metrics
//     registry); [Server.Start] serves on a listener and [Server.Shutdown]
//     drains it.
//   - The fleet (fleet.go): instances gw-1..gw-N, each with its own breakers,
//     retry budgets, bulkheads and in-flight counter, reading the breaker
//     overrides from the store through a cache, the fleet's freeze in the
//     same reads (freeze.go); requests are spread round-robin, or pinned
//     with the X-Kosha-Instance header.
//   - The gateway (gateway.go, jsonrpc.go, principal.go, chaosgate.go): the
//     JSON-RPC tools/call endpoint with a bearer principal, the per-client
//     rate limit, load shedding and the signed chaos header, refused while
//     the fleet is frozen (docs/contracts/freeze.md).
//   - The tools (tools.go, kb.go, outbox.go) and the degradation matrix;
//     the downstream simulators (downstream.go) with latency distributions,
//     error rates, periodic outages and their /admin/chaos knobs.
//   - Metrics (metrics.go, emf.go) and the traffic generator (traffic.go).
//
// docs/sandbox.md is the operator's guide.
package sandbox
