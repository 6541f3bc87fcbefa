package kinds

import (
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// RateLimitResetKind is the ratelimit.reset step: refill a client's bucket
// to capacity, so its next requests are admitted.
//
//	ratelimit.reset:
//	  client: drill-client   # required
//	  reason: end of flood
//
// After a drain in the same drill it registers no new rollback: the
// drain's rollback restores the level from before the drill.
type RateLimitResetKind struct{}

var _ drill.MutatingKind = RateLimitResetKind{}

// Name implements StepKind.
func (RateLimitResetKind) Name() string { return "ratelimit.reset" }

// Lever implements MutatingKind: a step moves a rate-limit bucket.
func (RateLimitResetKind) Lever() string { return drill.LeverBucket }

// Summary implements StepKind.
func (RateLimitResetKind) Summary() string {
	return "refill a client's bucket to capacity; rollback restores its level"
}

// Outputs implements StepKind.
func (RateLimitResetKind) Outputs() []string { return bucketOutputs }

// Decode implements StepKind.
func (RateLimitResetKind) Decode(d *drill.Decoder, n *yaml.Node) drill.Action {
	a, _ := decodeBucketStep(d, n, ratelimit.OpReset)
	if a == nil {
		return nil
	}
	return a
}
