// Package layout holds no code: its test keeps the two trees of the
// repository apart. The reference data plane (the circuit breaker's state
// machine, the limiter's take, the LLD's other primitives and the sandbox
// fleet built from them, under internal/dataplane) imports the control plane
// only through its contract packages (item codecs, gauge values and names,
// refill math, the chaos header, the freeze, the store, the audit record) and a few
// utilities that hold no rule; the control plane never imports the data
// plane. Only the command that runs the sandbox fleet, and the command tree
// and test harness that include that command, may. Both checks run for
// every system the release builds (linux, darwin, windows) and cover
// non-test code: a test may run the data plane against what a command wrote.
package layout
