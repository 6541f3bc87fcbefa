package status_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/cmd/sandbox/status"
	sbx "github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
)

func fleet(n int, value func(i, dep int) int) sbx.Status {
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	st := sbx.Status{StartedAt: now.Add(-90 * time.Second), Now: now, Context: "local", Profile: "flaky", TimeScale: 1,
		Dependencies: []string{"core-api", "openai", "screening-sim"}, Traffic: sbx.TrafficStatus{RPS: 8},
		Outbox: sbx.OutboxStats{Pending: 2, Published: 40}, Deferred: 3,
		Downstreams: []sbx.DownstreamStatus{{Name: "openai", Outage: true}, {Name: "screening-sim", Knob: &sbx.Knob{Fault: chaos.FaultError, P: 0.5}}}}
	names := []string{"closed", "half_open", "open", "forced_open"}
	for i := range n {
		in := sbx.InstanceStatus{Name: sbx.InstanceName(i + 1), InFlight: 1, Served: 10}
		for d, dep := range st.Dependencies {
			v := value(i, d)
			in.Breakers = append(in.Breakers, sbx.BreakerStatus{Dependency: dep, Value: v, State: names[v], RemainingOpenMs: 1500})
		}
		st.Instances = append(st.Instances, in)
	}
	return st
}

func TestPrintSmallFleetAsColumns(t *testing.T) {
	var b bytes.Buffer
	status.Print(&b, "http://127.0.0.1:8787", fleet(2, func(i, d int) int {
		if d == 1 {
			return 3
		}
		if i == 1 && d == 2 {
			return 2
		}
		return 0
	}))
	out := b.String()
	for _, want := range []string{"up 1m30s", "GW-1", "GW-2", "FORCED", "open 1.5s", "openai outage", "screening-sim knob error p=0.5",
		"outbox: 2 pending, 40 published; deferred screenings: 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestPrintLargeFleetAsCountsAndLetters(t *testing.T) {
	var b bytes.Buffer
	status.Print(&b, "http://127.0.0.1:8787", fleet(12, func(i, d int) int {
		if d == 2 && i%4 == 0 {
			return 2
		}
		return 0
	}))
	out := b.String()
	line := ""
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "screening-sim") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) != 6 || f[1] != "9" || f[3] != "3" || f[5] != "O...O...O..." {
		t.Errorf("screening-sim row %q, want 9 closed, 3 open and the strip O...O...O...", line)
	}
	if !strings.Contains(out, "12 instances: 12 in flight, 120 served") {
		t.Errorf("fleet totals missing:\n%s", out)
	}
}
