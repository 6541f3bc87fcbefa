package version_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/procbench"
)

// BenchmarkStartVersusSDKPeer runs, in turn in one loop, `koshactl version`
// and testdata/sdkpeer, a Go program linking the same AWS SDK clients that
// only prints its version, both built as the release builds them. The ratio
// koshactl/sdkpeer is what koshactl's own start-up costs (package
// initialisation, building its command); docs/benchmarks/startup.md.
func BenchmarkStartVersusSDKPeer(b *testing.B) {
	peer := procbench.Build(b, "./testdata/sdkpeer")
	kosha := procbench.Build(b, "github.com/kosha-platform/koshactl/cmd/koshactl")
	procbench.Compare(b,
		procbench.Proc{Name: "sdkpeer", Path: peer},
		procbench.Proc{Name: "koshactl", Path: kosha, Args: []string{"version"}},
	)
}
