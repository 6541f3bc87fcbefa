package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// emfVectorFile is docs/contracts/vectors/breaker-state-emf.json.
type emfVectorFile struct {
	Description string      `json:"description"`
	Contract    string      `json:"contract"`
	Namespace   string      `json:"default_namespace"`
	MetricName  string      `json:"metric_name"`
	Cases       []emfVector `json:"cases"`
}

type emfVector struct {
	Name              string `json:"name"`
	Namespace         string `json:"namespace"`
	Service           string `json:"service"`
	Instance          string `json:"instance"`
	InstanceDimension bool   `json:"instance_dimension"`
	Dependency        string `json:"dependency"`
	State             string `json:"state"`
	TimestampMs       int64  `json:"timestamp_ms"`
	// Line is the EMF document written (nil: no line, the dependency is
	// not a usable dimension value).
	Line map[string]any `json:"line"`
	// Metrics are the CloudWatch series the line publishes: one per
	// dimension set, with that set's dimension values.
	Metrics []emfSeries `json:"metrics"`
}

type emfSeries struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	Dimensions map[string]string `json:"dimensions"`
	Value      float64           `json:"value"`
}

// TestContractVectors generates docs/contracts/vectors/breaker-state-emf.json
// from the sandbox's EMF writer (the shape the metric contract gives) and
// fails when the checked-in file differs (make vectors rewrites it).
func TestContractVectors(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 19, 0, 30, 0, time.UTC).UnixMilli()
	cases := []emfVector{
		{Name: "fleet sets, instance as a property", Service: "gateway", Instance: "gw-1", Dependency: "openai", State: "open"},
		{Name: "instance-level set asked for", Service: "gateway", Instance: "gw-1", InstanceDimension: true, Dependency: "openai", State: "open"},
		{Name: "no service: the dependency set alone", Instance: "gw-1", InstanceDimension: true, Dependency: "openai", State: "closed"},
		{Name: "blank instance: no instance set", Service: "gateway", Instance: "  ", InstanceDimension: true, Dependency: "core-api", State: "half_open"},
		{Name: "no instance at all", Service: "gateway", InstanceDimension: true, Dependency: "core-api", State: "forced_open"},
		{Name: "custom namespace", Namespace: "Acme/Gateway", Service: "gateway", Instance: "gw-2", Dependency: "postgres", State: "forced_open"},
		{Name: "service with a control character: no service set", Service: "gate\tway", Instance: "gw-1", InstanceDimension: true, Dependency: "openai", State: "open"},
		{Name: "non-ASCII instance: no instance set, still a property", Service: "gateway", Instance: "gw-ö", InstanceDimension: true, Dependency: "openai", State: "open"},
		{Name: "service of 1024 characters", Service: strings.Repeat("s", 1024), Instance: "gw-1", Dependency: "openai", State: "closed"},
		{Name: "service of 1025 characters: no service set", Service: strings.Repeat("s", 1025), Instance: "gw-1", Dependency: "openai", State: "closed"},
		{Name: "empty dependency: no line", Service: "gateway", Instance: "gw-1", Dependency: "", State: "open"},
		{Name: "blank dependency: no line", Service: "gateway", Instance: "gw-1", Dependency: "   ", State: "open"},
		{Name: "non-ASCII dependency: no line", Service: "gateway", Instance: "gw-1", Dependency: "öpenai", State: "open"},
	}
	for i := range cases {
		c := &cases[i]
		c.TimestampMs = at
		st, err := gauge.ParseState(c.State)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		e := newEMFWriter(&buf, EMFSettings{Namespace: c.Namespace, Service: c.Service, InstanceDimension: c.InstanceDimension}, nil,
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := e.write(emfPoint{at: time.UnixMilli(at), dependency: c.Dependency, instance: c.Instance, state: st}); err != nil {
			t.Fatal(err)
		}
		c.Metrics = []emfSeries{}
		if buf.Len() == 0 {
			continue
		}
		if err := json.Unmarshal(buf.Bytes(), &c.Line); err != nil {
			t.Fatal(err)
		}
		var meta emfLine
		if err := json.Unmarshal(buf.Bytes(), &meta); err != nil {
			t.Fatal(err)
		}
		props := map[string]string{gauge.DimDependency: meta.Dependency, gauge.DimService: meta.Service, gauge.DimInstance: meta.Instance}
		for _, d := range meta.AWS.CloudWatchMetrics {
			for _, set := range d.Dimensions {
				dims := map[string]string{}
				for _, name := range set {
					dims[name] = props[name]
				}
				for _, m := range d.Metrics {
					c.Metrics = append(c.Metrics, emfSeries{Namespace: d.Namespace, Name: m.Name, Dimensions: dims, Value: float64(meta.BreakerState)})
				}
			}
		}
	}
	vectors.Check(t, "breaker-state-emf.json", emfVectorFile{
		Description: "The breaker_state gauge as CloudWatch embedded metric format lines (docs/contracts/breaker-state-metric.md): " +
			"namespace (empty: the default), service (empty: none), instance, whether the instance-level dimension set is wanted, " +
			"the dependency, the state's name and the timestamp give the one EMF document to write (line; null: write none, the " +
			"dependency is not a usable dimension value) and the series CloudWatch makes of it (metrics: one per dimension set). " +
			"A dimension value is 1 to 1024 printable ASCII characters, not all blank; a set is named only when its values are. " +
			"Compare lines as JSON values. Generated from the Go code by make vectors.",
		Contract:   "docs/contracts/breaker-state-metric.md",
		Namespace:  gauge.DefaultNamespace,
		MetricName: gauge.MetricName,
		Cases:      cases,
	})
}
