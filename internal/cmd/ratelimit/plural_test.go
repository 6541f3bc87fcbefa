package ratelimit_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestScanSummarySaysOneRequest: the summary said "1 items examined in 1
// requests"; counts read through one helper (human.Count).
func TestScanSummarySaysOneRequest(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "ratelimit", "drain", "solo", "--create")
	r := e.MustRun(0, "ratelimit", "list", "--max-read-units", "5")
	if !strings.Contains(r.Stderr, "scan: 1 item examined in 1 request, ") {
		t.Errorf("stderr %q, want the singular", r.Stderr)
	}
}
