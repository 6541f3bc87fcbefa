package freeze

import (
	"errors"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// ErrFrozen matches a *FrozenError: a chaos header is not minted while the
// fleet is frozen (exit 7, refused).
var ErrFrozen = exitcode.New(exitcode.Refused, "the fleet is frozen")

// FrozenError refuses a mint while the fleet is frozen, naming the freeze:
// who, why, the reference and until when.
type FrozenError struct {
	Freeze Freeze
	Now    time.Time
	// What says what the freeze holds ("no drill starts while the fleet
	// is frozen"); empty: a chaos header's mint.
	What string
}

// Error says which freeze holds and how it ends.
func (e *FrozenError) Error() string {
	how := "it ends when lifted (koshactl freeze lift) or when it expires"
	if e.Freeze.ExpiresAt.IsZero() {
		how = "it holds until lifted (koshactl freeze lift)"
	}
	what := e.What
	if what == "" {
		what = "no chaos header is minted while the fleet is frozen"
	}
	return e.Freeze.Describe(e.Now) + ": " + what + "; " + how
}

// Is makes errors.Is(err, ErrFrozen) true, and its exit code ErrFrozen's.
func (e *FrozenError) Is(target error) bool { return errors.Is(ErrFrozen, target) }

// MaxMintWait is the longest [CheckMint] asks a minter to wait: a header
// issued in the second a freeze ended, before the end, would be void, so a
// mint in that second waits for the next.
const MaxMintWait = time.Second

// CheckMint is the rule of minting a chaos header at now, given the fleet's
// freeze (nil: none): a *FrozenError while it holds; otherwise how long to
// wait before minting so the header's iat (now, floored to the second) is
// not before the freeze's end (at most [MaxMintWait]; zero mostly). A
// minter waits, then mints with its clock's new now.
func CheckMint(f *Freeze, now time.Time) (wait time.Duration, err error) {
	if f == nil {
		return 0, nil
	}
	if f.FrozenAt(now) {
		return 0, &FrozenError{Freeze: *f, Now: now}
	}
	// Past the end, its second rounded up is at most a second away.
	if nb, _ := f.ChaosNotBefore(); now.Unix() < nb {
		return time.Unix(nb, 0).Sub(now), nil
	}
	return 0, nil
}
