package gauge

import "strings"

// The metric contract (docs/contracts/breaker-state-metric.md): the names
// the data plane publishes under and the control plane reads.
const (
	// DefaultNamespace is the CloudWatch namespace of breaker_state unless the
	// context names another.
	DefaultNamespace = "Kosha/Resilience"
	// MetricName is the gauge's name in CloudWatch.
	MetricName = "breaker_state"
	// DimDependency names the dependency whose breaker the value describes.
	DimDependency = "dependency"
	// DimService optionally names the service (gateway fleet) publishing.
	DimService = "service"
	// DimInstance optionally names the instance (execution environment).
	DimInstance = "instance"
)

// PrometheusMetricName is the gauge's name in the Prometheus exposition
// format, with labels dependency and instance.
const PrometheusMetricName = "kosha_breaker_state"

// The call counters the impact of a lever is read from
// (docs/contracts/degradation-matrix.md, "Call rates"): every tool call and
// every logical downstream call, counted by the data plane, by outcome.
const (
	// ToolCallsPrometheusName counts tool calls, with labels tool and
	// outcome (ok, degraded, deferred, or the error code).
	ToolCallsPrometheusName = "kosha_tool_calls_total"
	// DownstreamCallsPrometheusName counts logical downstream calls
	// (retries inside one), with labels dependency and outcome.
	DownstreamCallsPrometheusName = "kosha_downstream_calls_total"
	// ToolCallsMetricName is the tool-call count in CloudWatch (unit
	// Count, dimension tool [and service]), read as a Sum per minute.
	ToolCallsMetricName = "tool_calls"
	// DownstreamCallsMetricName is the downstream-call count in
	// CloudWatch (unit Count, dimension dependency [and service]).
	DownstreamCallsMetricName = "downstream_calls"
	// DimTool names the tool a call count is of.
	DimTool = "tool"
	// DimOutcome names a call's outcome (a Prometheus label only: the
	// CloudWatch counts are published without it, one series per tool).
	DimOutcome = "outcome"
)

// DimensionValue reports whether v can be a CloudWatch dimension value: 1
// to 1024 printable ASCII characters, not all blank. CloudWatch drops a
// dimension set whose value is empty (EMF does so silently), so a
// publisher names only sets its values fill, and a reader asks only for
// values a publisher could have written.
func DimensionValue(v string) bool {
	if strings.TrimSpace(v) == "" || len(v) > 1024 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}
