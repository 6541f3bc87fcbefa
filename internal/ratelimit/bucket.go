package ratelimit

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// KeyPrefix starts the pk of every bucket item.
const KeyPrefix = "rl#"

// Attribute names of the bucket item (docs/contracts/rate-limit-bucket.md).
const (
	AttrTokens    = "tokens"
	AttrUpdatedAt = "updated_at"
)

// MaxClientIDLen bounds a client id (it is part of a DynamoDB key and of log lines).
const MaxClientIDLen = 128

// ErrInvalidClient reports a client id that cannot name a bucket.
var ErrInvalidClient = errors.New("invalid client id")

// ErrMalformedBucket reports a stored item that is not a well-formed bucket.
var ErrMalformedBucket = errors.New("malformed rate-limit bucket item")

const clientCharsHelp = "client ids are 1-128 characters of letters, digits and . _ : @ -"

func clientChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("._:@-", c) >= 0
}

// CheckClients checks the client ids one change names: each valid
// ([ValidateClientID]), none named twice.
func CheckClients(ids []string) error { return lever.CheckTargets(ids, "client", ValidateClientID) }

// ValidateClientID checks a client id: 1 to 128 ASCII letters, digits, '.',
// '_', ':', '@' or '-'. The error names the problem and how to fix it.
func ValidateClientID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: it is empty; %s", ErrInvalidClient, clientCharsHelp)
	}
	if rest, ok := strings.CutPrefix(id, KeyPrefix); ok {
		return fmt.Errorf("%w %q: give the client id without the %q key prefix (%q)", ErrInvalidClient, id, KeyPrefix, rest)
	}
	if len(id) > MaxClientIDLen {
		return fmt.Errorf("%w: it is %d characters long; %s", ErrInvalidClient, len(id), clientCharsHelp)
	}
	for i := 0; i < len(id); {
		r, size := utf8.DecodeRuneInString(id[i:])
		if size == 1 && clientChar(id[i]) {
			i++
			continue
		}
		what := fmt.Sprintf("%q", r)
		switch {
		case r == utf8.RuneError && size == 1:
			what = "a byte that is not UTF-8"
		case r == ' ':
			what = "a space"
		}
		return fmt.Errorf("%w %q: %s at position %d is not allowed; %s", ErrInvalidClient, id, what, i+1, clientCharsHelp)
	}
	return nil
}

// Key returns the pk of client's bucket.
func Key(client string) string { return KeyPrefix + client }

// Bucket is a stored bucket item, as written.
type Bucket struct {
	Client string
	// Tokens is the stored token count: what the bucket held at UpdatedAtMs.
	Tokens float64
	// UpdatedAtMs is the epoch-millisecond time of the last write.
	UpdatedAtMs int64
	// TTL is the ttl attribute (epoch seconds); zero when absent.
	TTL int64
	// WriteID is the token of the operator write the bucket descends from
	// (the write_id attribute; "" when none): an operator change stamps a
	// new one, and a take carries the one it read forward, so after a lost
	// answer a re-read tells whether the operator's write landed even when
	// takes followed it.
	WriteID string
}

// UpdatedAt returns UpdatedAtMs as a time.
func (b Bucket) UpdatedAt() time.Time { return time.UnixMilli(b.UpdatedAtMs).UTC() }

// Item encodes the bucket as a store item following the contract.
func (b Bucket) Item() store.Item {
	it := store.Item{
		store.PK:      Key(b.Client),
		AttrTokens:    b.Tokens,
		AttrUpdatedAt: b.UpdatedAtMs,
	}
	if b.TTL > 0 {
		it[store.TTLAttr] = b.TTL
	}
	if b.WriteID != "" {
		it[store.WriteIDAttr] = b.WriteID
	}
	return it
}

// BucketFromItem decodes a stored bucket item. Numbers may be stored as
// integers or decimals; tokens and updated_at are required.
func BucketFromItem(it store.Item) (Bucket, error) {
	pk := it.PK()
	client, ok := strings.CutPrefix(pk, KeyPrefix)
	if !ok || client == "" {
		return Bucket{}, fmt.Errorf("%w: %w", ErrMalformedBucket,
			store.Problem{PK: pk, Attribute: store.PK, Problem: fmt.Sprintf("found S %q, want %s<client>", pk, KeyPrefix)})
	}
	b := Bucket{Client: client}
	if b.Tokens, ok = it.Float(AttrTokens); !ok {
		return Bucket{}, malformed(it, AttrTokens, "want N")
	}
	if b.UpdatedAtMs, ok = it.Int(AttrUpdatedAt); !ok || b.UpdatedAtMs <= 0 {
		return Bucket{}, malformed(it, AttrUpdatedAt, "want N, positive epoch milliseconds")
	}
	b.TTL, _ = it.Int(store.TTLAttr)
	b.WriteID = it.WriteID()
	return b, nil
}

// malformed reports attribute attr of it as not following the contract: an
// error wrapping ErrMalformedBucket and a store.Problem (errors.As finds it).
func malformed(it store.Item, attr, want string) error {
	return fmt.Errorf("%w: %w", ErrMalformedBucket,
		store.Problem{PK: it.PK(), Attribute: attr, Problem: "found " + store.Found(it, attr) + ", " + want})
}

// Status is what a bucket means at one instant: the stored values and the
// contract's reading of them.
type Status struct {
	Client string
	// Exists is false when there is no item (a full bucket).
	Exists bool
	// Stored is the item as stored; zero when it does not exist.
	Stored Bucket
	// At is the instant the status describes.
	At time.Time
	// Limits are the capacity and rate the status was computed with.
	Limits Limits
	// Tokens is the contract's refilled level at At.
	Tokens float64
	// Admit reports whether a request at At would be admitted (Tokens >= 1).
	Admit bool
	// RetryAfter is how long until a request would be admitted (zero when Admit).
	RetryAfter time.Duration
	// NextToken is how long until the bucket gains its next whole token
	// (zero when full).
	NextToken time.Duration
	// UntilFull is how long until the bucket is full (zero when full).
	UntilFull time.Duration
	// AheadOfClock is how far the stored updated_at is ahead of At (a writer
	// with a faster clock, or the data plane's same-millisecond stamps); no
	// refill accrues until At catches up. Like the waits above, it saturates
	// at time.Duration's range (about 292 years) for a corrupt updated_at.
	AheadOfClock time.Duration
}

// StatusOf evaluates b (nil: no item) with limits l at now.
func StatusOf(client string, b *Bucket, l Limits, now time.Time) Status {
	l = l.WithDefaults()
	s := Status{Client: client, At: now, Limits: l, Tokens: l.Capacity}
	if b != nil {
		s.Exists = true
		s.Stored = *b
		s.Tokens = l.Refill(b.Tokens, b.UpdatedAtMs, now.UnixMilli())
		if ahead := b.UpdatedAtMs - now.UnixMilli(); ahead > 0 {
			s.AheadOfClock = msWait(float64(ahead))
		}
	}
	s.Admit = s.Tokens >= 1
	// Refill only starts once the clock reaches updated_at.
	wait := func(d time.Duration) time.Duration {
		if d > 0 {
			d = addWait(d, s.AheadOfClock)
		}
		return d
	}
	s.RetryAfter = wait(l.RetryAfter(s.Tokens))
	s.NextToken = wait(l.NextToken(s.Tokens))
	s.UntilFull = wait(l.UntilFull(s.Tokens))
	return s
}

// Full reports whether the bucket is at capacity.
func (s Status) Full() bool { return s.Tokens >= s.Limits.WithDefaults().Capacity }

// Throttled reports whether the client is being limited now (its next
// request would be refused).
func (s Status) Throttled() bool { return !s.Admit }

// TTLExpiry returns when DynamoDB may collect the item (zero without ttl).
func (s Status) TTLExpiry() time.Time {
	if !s.Exists || s.Stored.TTL <= 0 {
		return time.Time{}
	}
	return time.Unix(s.Stored.TTL, 0).UTC()
}
