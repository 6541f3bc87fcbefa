package gauge

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
