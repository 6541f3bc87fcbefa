package kinds

import (
	"fmt"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// Plan implements Mutating.
func (a *forceOpen) Plan(rc *drill.RunContext) *drill.PlanLever {
	bound, parts := rc.Drill.Timeout, []string{"the drill's deadline (" + rc.Drill.Timeout.String() + " after the start)"}
	if a.forDur > 0 {
		bound, parts = min(bound, a.forDur), append(parts, "for "+a.forDur.String())
	}
	m := overridePolicy(rc).MaxFor()
	bound, parts = min(bound, m), append(parts, "the context's max-override "+m.String())
	return &drill.PlanLever{Subject: breaker.OverrideKey(rc.Describe(a.dependency)),
		Inverse:              "clear the drill's override (or restore an override someone else held before)",
		ExpiresWithinSeconds: drill.Seconds(bound), Expiry: "the override expires at the earliest of " + strings.Join(parts, ", ")}
}

// Plan implements Mutating.
func (a *clearOverride) Plan(rc *drill.RunContext) *drill.PlanLever {
	return &drill.PlanLever{Subject: breaker.OverrideKey(rc.Describe(a.dependency)),
		Inverse: "restore the override the drill cleared, if someone else held it (same reason, actor and expiry)",
		Expiry:  "a clear does not lapse: the rollback restores what was there"}
}

// Plan implements Mutating.
func (a *bucketStep) Plan(rc *drill.RunContext) *drill.PlanLever {
	l := &drill.PlanLever{Subject: ratelimit.Key(rc.Describe(a.client)), Inverse: "set the bucket back to its level before the drill, refilled since"}
	oneToken := time.Second
	if b := rc.Deps.Buckets; b != nil && b.Limits().RefillPerSecond > 0 {
		oneToken = time.Duration(float64(time.Second) / b.Limits().RefillPerSecond)
	}
	switch {
	case a.op == ratelimit.OpDrain && a.hold > 0:
		hold := max(min(a.hold, rc.Drill.Timeout-oneToken), 0)
		l.ExpiresWithinSeconds = drill.Seconds(hold + oneToken)
		l.Expiry = fmt.Sprintf("refused for min(for %s, the deadline less one refill interval %s); the next token one refill interval later", a.hold, oneToken)
	case a.op == ratelimit.OpDrain:
		l.ExpiresWithinSeconds = drill.Seconds(oneToken)
		l.Expiry = fmt.Sprintf("tokens 0: the next token arrives after one refill interval (%s)", oneToken)
	default:
		l.Expiry = "the bucket refills on its own at its rate"
	}
	return l
}

// Plan implements Mutating.
func (a *chaosSign) Plan(rc *drill.RunContext) *drill.PlanLever {
	ttl := a.req.TTL
	if ttl == 0 {
		ttl = chaos.DefaultTTL
	}
	bound := min(ttl, rc.Drill.Timeout, chaos.MaxTTL).Truncate(time.Second)
	return &drill.PlanLever{Subject: "chaos#" + rc.CurrentStep(), Inverse: "withdraw the header from the run (it cannot be revoked)",
		ExpiresWithinSeconds: drill.Seconds(bound), Expiry: fmt.Sprintf("the header expires after min(ttl %s, time left, %s)", ttl, chaos.MaxTTL)}
}
