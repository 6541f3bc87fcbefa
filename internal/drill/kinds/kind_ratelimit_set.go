package kinds

import (
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// RateLimitSetKind is the ratelimit.set step: write an exact token count.
//
//	ratelimit.set:
//	  client: drill-client   # required
//	  tokens: 3              # required, 0 to the bucket's capacity
type RateLimitSetKind struct{}

var _ drill.MutatingKind = RateLimitSetKind{}

// Name implements StepKind.
func (RateLimitSetKind) Name() string { return "ratelimit.set" }

// Lever implements MutatingKind: a step moves a rate-limit bucket.
func (RateLimitSetKind) Lever() string { return drill.LeverBucket }

// Summary implements StepKind.
func (RateLimitSetKind) Summary() string {
	return "set a client's bucket to N tokens; rollback restores its level"
}

// Outputs implements StepKind.
func (RateLimitSetKind) Outputs() []string { return bucketOutputs }

// Decode implements StepKind.
func (RateLimitSetKind) Decode(d *drill.Decoder, n *yaml.Node) drill.Action {
	a, m := decodeBucketStep(d, n, ratelimit.OpSet, "tokens")
	if m == nil {
		return nil
	}
	tokens, ok := m.Float("tokens", true)
	if ok && tokens < 0 {
		m.Errorf("tokens", "%g is negative: give 0 to the capacity (to hold a client refused, use ratelimit.drain with for)", tokens)
		ok = false
	}
	if a == nil || !ok {
		return nil
	}
	a.tokens = tokens
	return a
}
