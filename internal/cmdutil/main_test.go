package cmdutil_test

import (
	"os"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/cmdutil/jq"
)

// TestMain gives --jq its implementation, as the full program's root does.
func TestMain(m *testing.M) {
	cmdutil.UseJQ(jq.Compile)
	os.Exit(m.Run())
}
