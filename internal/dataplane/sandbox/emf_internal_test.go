package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// EMF drops a dimension set whose value is empty (CloudWatch wants 1 to
// 1024 printable ASCII characters): a line names only the sets its values
// can fill, and a line without a usable dependency is not written.
func TestEMFNamesOnlyDimensionSetsItsValuesFill(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                 string
		settings             EMFSettings
		dependency, instance string
		want                 [][]string // nil: no line
		wantSvc              bool
	}{
		{"fleet sets, instance as a property", EMFSettings{Service: "mcp-gateway"}, "openai", "gw-1",
			[][]string{{"dependency"}, {"dependency", "service"}}, true},
		{"instance set asked for", EMFSettings{Service: "mcp-gateway", InstanceDimension: true}, "openai", "gw-1",
			[][]string{{"dependency"}, {"dependency", "service"}, {"dependency", "service", "instance"}}, true},
		{"empty service: no set with it", EMFSettings{InstanceDimension: true}, "openai", "gw-1",
			[][]string{{"dependency"}}, false},
		{"blank instance: no instance set", EMFSettings{Service: "mcp-gateway", InstanceDimension: true}, "openai", "  ",
			[][]string{{"dependency"}, {"dependency", "service"}}, true},
		{"empty dependency: no line", EMFSettings{Service: "mcp-gateway"}, "", "gw-1", nil, false},
		{"non-ASCII dependency: no line", EMFSettings{Service: "mcp-gateway"}, "öpenai", "gw-1", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := newEMFWriter(&buf, tc.settings, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err := e.write(emfPoint{at: at, dependency: tc.dependency, instance: tc.instance, state: circuit.Open}); err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if buf.Len() != 0 {
					t.Fatalf("wrote %q, want nothing", buf.String())
				}
				return
			}
			var line map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil || strings.Count(buf.String(), "\n") != 1 {
				t.Fatalf("not one JSON line: %v\n%s", err, buf.String())
			}
			var meta struct {
				AWS struct {
					CloudWatchMetrics []struct{ Dimensions [][]string }
				} `json:"_aws"`
			}
			_ = json.Unmarshal(buf.Bytes(), &meta)
			if got := meta.AWS.CloudWatchMetrics[0].Dimensions; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("dimension sets %v, want %v", got, tc.want)
			}
			if _, ok := line["service"]; ok != tc.wantSvc {
				t.Errorf("service property present %v, want %v: %s", ok, tc.wantSvc, buf.String())
			}
			// The instance stays a log property whatever the sets.
			if line["dependency"] != tc.dependency || line["instance"] != tc.instance || line["breaker_state"] != float64(2) {
				t.Errorf("line = %s", buf.String())
			}
		})
	}
}
