// Package procbench times whole processes against a peer program, for the
// benchmarks that state koshactl's start-up as a ratio (docs/benchmarks).
//
// [Build] compiles a main package as the release does (CGO_ENABLED=0,
// -trimpath); [Compare] runs the processes in turn, once each per benchmark
// iteration, so every one sees the same machine load, and reports the median
// wall time of each and the ratio of the first to every other. A shared
// machine is noisy: run many iterations (-benchtime 200x) and read medians.
// [PeakRSS] runs one process and says the most memory it held resident.
package procbench
