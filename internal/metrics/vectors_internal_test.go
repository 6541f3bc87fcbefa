package metrics

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// gaugeVectorFile is docs/contracts/vectors/breaker-state-gauge.json.
type gaugeVectorFile struct {
	Description string `json:"description"`
	Contract    string `json:"contract"`
	Names       struct {
		Namespace  string   `json:"default_namespace"`
		Metric     string   `json:"metric_name"`
		Prometheus string   `json:"prometheus_metric_name"`
		Dimensions []string `json:"dimensions"`
	} `json:"names"`
	States []struct {
		Value int    `json:"value"`
		Name  string `json:"name"`
	} `json:"states"`
	StateNames []stateNameVector `json:"state_names"`
	Values     []valueVector     `json:"values"`
	Fleet      []fleetVector     `json:"fleet"`
}

// stateNameVector: a state as a person or a tool spells it, and the gauge
// value it names (nil: no state).
type stateNameVector struct {
	Input string `json:"input"`
	Value *int   `json:"value"`
}

// valueVector: a gauge value as read (a per-minute Maximum, say) and the
// breaker state it encodes (nil: not a state).
type valueVector struct {
	Value float64 `json:"value"`
	State *string `json:"state"`
}

// fleetVector: the fleet's newest Maximum and Minimum and the state the
// dashboard shows when no override is active.
type fleetVector struct {
	HasData bool    `json:"has_data"`
	Max     float64 `json:"max"`
	Min     float64 `json:"min"`
	Shown   string  `json:"shown"`
}

// TestContractVectors generates docs/contracts/vectors/breaker-state-gauge.json
// from the gauge's names and the readers' rules (GaugeState, the fleet's
// worst and best) and fails when the checked-in file differs.
func TestContractVectors(t *testing.T) {
	var doc gaugeVectorFile
	doc.Description = "The breaker_state gauge as readers take it (docs/contracts/breaker-state-metric.md): its names; the four " +
		"states and their values; state names as accepted on input (state_names: value null = not a state); a value as " +
		"CloudWatch or Prometheus returns it and the state it encodes (rounded to the nearest integer; outside 0..3 is not a " +
		"state); and the fleet's newest Maximum and Minimum and the state the dashboard shows when no override is active " +
		"(equal states: that state; different: mixed; no data or a value that is not a state: no_data). An active override " +
		"shows forced_open whatever the gauge says. Never average the gauge. Generated from the Go code by make vectors."
	doc.Contract = "docs/contracts/breaker-state-metric.md"
	doc.Names.Namespace, doc.Names.Metric, doc.Names.Prometheus = gauge.DefaultNamespace, gauge.MetricName, gauge.PrometheusMetricName
	doc.Names.Dimensions = []string{gauge.DimDependency, gauge.DimService, gauge.DimInstance}
	for s := gauge.Closed; s <= gauge.ForcedOpen; s++ {
		doc.States = append(doc.States, struct {
			Value int    `json:"value"`
			Name  string `json:"name"`
		}{int(s), s.String()})
	}
	for _, in := range []string{"closed", "half_open", "open", "forced_open", "Forced-Open", "half open", "HALF", "forced", " open ",
		"0", "1", "2", "3", "4", "-1", "", "opened", "mixed", "no_data", "forced__open"} {
		nv := stateNameVector{Input: in}
		if s, err := gauge.ParseState(in); err == nil {
			n := int(s)
			nv.Value = &n
		}
		doc.StateNames = append(doc.StateNames, nv)
	}
	for _, val := range []float64{0, 1, 2, 3, 0.4, 0.5, 1.5, 2.49, 2.5, 3.49, 3.5, -0.49, -0.5, -1, 4, 1e300} {
		vv := valueVector{Value: val}
		if s, ok := GaugeState(val); ok {
			name := s.String()
			vv.State = &name
		}
		doc.Values = append(doc.Values, vv)
	}
	for _, f := range []fleetVector{{HasData: false}, {HasData: true, Max: 0, Min: 0}, {HasData: true, Max: 2, Min: 2}, {HasData: true, Max: 2, Min: 0},
		{HasData: true, Max: 3, Min: 3}, {HasData: true, Max: 3, Min: 0}, {HasData: true, Max: 1, Min: 1}, {HasData: true, Max: 5, Min: 0},
		{HasData: true, Max: 2.2, Min: 1.8}, {HasData: true, Max: 1, Min: -3}} {
		f.Shown = gaugeState(Gauges{HasData: f.HasData, Max: f.Max, Min: f.Min}).String()
		doc.Fleet = append(doc.Fleet, f)
	}
	vectors.Check(t, "breaker-state-gauge.json", doc)
}
