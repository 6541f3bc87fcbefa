// Package exposition is the sandbox fleet's metrics registry: counters,
// counter vectors with fixed label names, histogram vectors with fixed
// buckets and scrape-time ("const") gauges and counters, gathered into
// Prometheus metric families and served over HTTP.
//
// It exists so that koshactl does not link
// github.com/prometheus/client_golang. Every koshactl process, `koshactl
// version` included, ran that library's package initialisation: its default
// registry registers a Go collector and a process collector, and it pulls in
// github.com/prometheus/procfs (regular expressions compiled at init) and
// expvar. Measured with perf, removing them took `koshactl version` from
// 3.70 ms to 3.21 ms (13%), what issue 23's start-up target needs
// (docs/benchmarks/startup.md). The sandbox used only a small part of the
// library, which this package reproduces.
//
// The wire format is not ours: Gather builds the metric families of
// github.com/prometheus/client_model, and [Registry.Handler] negotiates the
// format with github.com/prometheus/common/expfmt and encodes with it, the
// same encoder client_golang uses. What this package decides is the
// families' content, which follows client_golang: families sorted by name,
// a family's label pairs sorted by label name and its series by label
// values in that order, families without series left out, and the +Inf
// bucket of a histogram left to the encoder.
//
// Names and label names are checked when a metric is built (a panic, like
// client_golang's constructors: they are constants in the code), and
// [Registry.Register] refuses a name registered twice. Label values are
// data, often untrusted: the encoder escapes them, and invalid UTF-8 is
// replaced with U+FFFD when a series is created (client_golang panics),
// because the protobuf format cannot carry it.
package exposition
