package breaker_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// TestStatusOnAnEndpointWithoutCloudWatch: issue 22. On the README's dev
// context (one --endpoint-url for every service; dynalite then, moto now)
// breaker status failed with a raw CBOR decode error: neither serves the Go
// SDK's CloudWatch protocol. It says so,
// names how to point gauges elsewhere, and exits 5.
func TestStatusOnAnEndpointWithoutCloudWatch(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")
	e.MustRun(0, "store", "init")
	r := e.MustRun(exitcode.Unavailable, "breaker", "status")
	t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	for _, want := range []string{"serves no CloudWatch", endpoint, "--service-endpoint cloudwatch=", "--prometheus-url", "breaker list"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	if strings.Contains(strings.ToLower(r.Stderr), "cbor") {
		t.Errorf("the raw decode error reached the operator:\n%s", r.Stderr)
	}
}
