package bucketview

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// BucketView is the stable JSON shape of a bucket.
type BucketView struct {
	Client string `json:"client"`
	Key    string `json:"key"`
	// Exists is false when there is no item: a full bucket.
	Exists bool `json:"exists"`
	// StoredTokens and UpdatedAt are the item's attributes (null when absent).
	StoredTokens *float64 `json:"stored_tokens"`
	UpdatedAt    *string  `json:"updated_at"`
	UpdatedAtMs  *int64   `json:"updated_at_ms"`
	// Tokens is the contract's refilled level at AsOf.
	Tokens          float64 `json:"tokens"`
	Capacity        float64 `json:"capacity"`
	RefillPerSecond float64 `json:"refill_per_second"`
	// Admit says whether a request at AsOf would be admitted.
	Admit             bool    `json:"admit"`
	RetryAfterSeconds float64 `json:"retry_after_seconds"`
	NextTokenSeconds  float64 `json:"next_token_seconds"`
	FullInSeconds     float64 `json:"full_in_seconds"`
	TTLExpiresAt      *string `json:"ttl_expires_at"`
	AsOf              string  `json:"as_of"`
}

// View converts a status for output.
func View(s ratelimit.Status) BucketView {
	v := BucketView{
		Client: s.Client, Key: ratelimit.Key(s.Client), Exists: s.Exists, Tokens: s.Tokens,
		Capacity: s.Limits.Capacity, RefillPerSecond: s.Limits.RefillPerSecond, Admit: s.Admit,
		RetryAfterSeconds: s.RetryAfter.Seconds(), NextTokenSeconds: s.NextToken.Seconds(), FullInSeconds: s.UntilFull.Seconds(),
		TTLExpiresAt: cmdutil.TimeOrNil(s.TTLExpiry()), AsOf: *cmdutil.TimeOrNil(s.At),
	}
	if s.Exists {
		tokens, ms := s.Stored.Tokens, s.Stored.UpdatedAtMs
		v.StoredTokens, v.UpdatedAtMs = &tokens, &ms
		v.UpdatedAt = cmdutil.TimeOrNil(s.Stored.UpdatedAt())
	}
	return v
}

// WaitText renders a rate-limit wait (a retry-after, a refill time) with
// [human.Duration], rounded up so it never reads early: to the millisecond
// under a second, to a tenth of a second under ten seconds, to the second
// above; "now" when there is nothing to wait.
func WaitText(d time.Duration) string {
	switch {
	case d <= 0:
		return "now"
	case d < time.Second:
		return human.Duration(d.Truncate(time.Millisecond))
	case d < 10*time.Second:
		return human.Duration((d + 100*time.Millisecond - 1).Truncate(100 * time.Millisecond)) // rounded up
	}
	return human.Age(d)
}

// WaitFromNow renders a wait as "in 500ms", or "now".
func WaitFromNow(d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	return "in " + WaitText(d)
}
