package root

import (
	"context"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
)

// RunWholeTree is [Run] building the whole tree whatever args name: what a
// group built alone must print alike.
func RunWholeTree(ctx context.Context, f *cmdenv.Factory, args []string) int {
	return run(ctx, f, args, "")
}
