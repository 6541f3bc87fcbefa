package freeze

// The chaos_frozen gauge (docs/contracts/freeze.md#the-gauge): one series
// per data-plane instance, 1 while the instance refuses every chaos header
// because of the freeze (the fleet is frozen, or the instance has not read
// the freeze item within MaxReadAge), 0 otherwise. A freeze is confirmed
// fleet-wide when every instance reports 1, a lift when every one reports 0.
const (
	// MetricName is the gauge's name in CloudWatch (EMF), unit None, in the
	// breaker_state gauge's namespace.
	MetricName = "chaos_frozen"
	// PrometheusMetricName is its name in the Prometheus exposition format,
	// with the label instance.
	PrometheusMetricName = "kosha_chaos_frozen"
)

// Its dimensions and labels are the breaker_state gauge's service and
// instance (internal/gauge); it has no dependency.
