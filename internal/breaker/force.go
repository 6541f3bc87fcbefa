package breaker

import (
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
)

// CacheTTL is how long a data-plane instance may act on the override it read
// last: it reads breaker#<dependency> at most once per CacheTTL (the LLD's
// 5 s cache), so a force or clear reaches the whole fleet within it.
const CacheTTL = 5 * time.Second

// Force is what a data plane's override source knows about one dependency's forced_open
// override.
type Force struct {
	// Active reports whether the override holds: the item exists and its
	// state is forced_open. A source should already have applied the expiry
	// it read; the watcher checks ExpiresAt again as time passes.
	Active bool
	// ExpiresAt is when the override stops holding. Zero means it does not
	// expire.
	ExpiresAt time.Time
	// Reason is the operator's note, copied into the watcher's log event.
	Reason string
	// Malformed, when set, says what of the stored item does not follow the
	// contract (the first problem). The rule above already applied to it: a
	// malformed expiry counts as none, so such an override holds until it
	// is cleared. The watcher logs it, so the fleet's logs show why.
	Malformed string
}

// ActiveAt reports whether the override holds at now.
func (f Force) ActiveAt(now time.Time) bool {
	return f.Active && (f.ExpiresAt.IsZero() || now.Before(f.ExpiresAt))
}

// ForceOf applies the data plane's rule to one read of a dependency's
// override: the item read (nil when there was none) at now. It is what an
// override source reports, however it read the item (one GetItem, or a
// batch read with the freeze item): an absent item is an inactive Force;
// an item outside breaker# is an error, as a failed read is.
func ForceOf(it store.Item, now time.Time) (Force, error) {
	if it == nil {
		return Force{}, nil
	}
	o, err := OverrideFromItem(it)
	if err != nil {
		return Force{}, err
	}
	return o.ForceAt(now), nil
}
