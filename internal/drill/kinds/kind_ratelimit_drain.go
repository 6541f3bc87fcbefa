package kinds

import (
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// RateLimitDrainKind is the ratelimit.drain step: empty a client's bucket
// so its next requests get 429s.
//
//	ratelimit.drain:
//	  client: drill-client   # required
//	  for: 30s               # keep it refused this long (at most 1h), bounded by the deadline
//	  reason: flood drill
//
// With for, the bucket is written with negative tokens that the data
// plane's refill brings back to zero after that long, so the client
// recovers on its own even if koshactl is killed. Rollback restores the
// level the bucket had before the drill.
type RateLimitDrainKind struct{}

var _ drill.MutatingKind = RateLimitDrainKind{}

// Name implements StepKind.
func (RateLimitDrainKind) Name() string { return "ratelimit.drain" }

// Lever implements MutatingKind: a step moves a rate-limit bucket.
func (RateLimitDrainKind) Lever() string { return drill.LeverBucket }

// Summary implements StepKind.
func (RateLimitDrainKind) Summary() string {
	return "empty a client's bucket (optionally held for a while); rollback restores its level"
}

// Outputs implements StepKind.
func (RateLimitDrainKind) Outputs() []string { return bucketOutputs }

// Decode implements StepKind.
func (RateLimitDrainKind) Decode(d *drill.Decoder, n *yaml.Node) drill.Action {
	a, m := decodeBucketStep(d, n, ratelimit.OpDrain, "for")
	if m == nil {
		return nil
	}
	if hold, ok := m.Duration("for", false); ok {
		if ratelimit.CheckDrainHold(hold) != nil {
			m.Errorf("for", "%s is longer than the %s a drain may hold", hold, ratelimit.MaxDrainHold)
			return nil
		}
		if a != nil {
			a.hold = hold
		}
	}
	if a == nil {
		return nil
	}
	return a
}
