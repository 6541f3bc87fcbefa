// Package layout holds no code: its test keeps the two trees of the
// repository apart. The reference data plane (the circuit breaker's state
// machine, the limiter's take, the LLD's other primitives and the sandbox
// fleet built from them) may import the control plane's contract code (item
// codecs, gauge values, refill math); the control plane never imports the
// data plane. Only the command that runs the sandbox fleet, and the command
// tree and test harness that include that command, may.
package layout
