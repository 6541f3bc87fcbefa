package leversview

import (
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/levers"
)

// The dashboard's lines: the window in force first, then the next to
// open; a one-off window already over is left out.
func TestWindowLinesSoonestFirst(t *testing.T) {
	src := `version: 1
context: prod
windows:
  - {id: later, dependency: openai, reason: provider maintenance, start: 2026-12-09T05:00:00Z, duration: 45m}
  - {id: now, dependency: postgres, reason: RDS upgrade, start: 2026-12-05T02:00:00Z, end: 2026-12-05T02:30:00Z}
  - {id: over, dependency: core-api, reason: done, start: 2026-12-01T02:00:00Z, duration: 1h}
  - {id: weekly, dependency: screening-sim, reason: load test, start: 2026-11-29T03:00:00Z, duration: 1h, repeat: weekly}
`
	f, err := levers.Parse("prod.yaml", []byte(src), levers.Rules{Known: []string{"openai", "postgres", "core-api", "screening-sim"}})
	if err != nil {
		t.Fatal(err)
	}
	got := WindowLines(f, time.Date(2026, 12, 5, 2, 10, 0, 0, time.UTC))
	want := []string{
		"postgres in force until 2026-12-05T02:30:00.000Z: RDS upgrade (now)",
		"screening-sim 2026-12-06T03:00:00.000Z to 2026-12-06T04:00:00.000Z (weekly): load test (weekly)",
		"openai 2026-12-09T05:00:00.000Z to 2026-12-09T05:45:00.000Z: provider maintenance (later)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
