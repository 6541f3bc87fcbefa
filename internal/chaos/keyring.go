package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Keyring is where signing and verification keys come from. Implementations
// live in internal/chaos/keys (Secrets Manager, file, environment variable,
// local generated key).
type Keyring interface {
	// Current returns the key new headers are signed with.
	Current(ctx context.Context) (Key, error)
	// ByKID returns the verification key whose id is kid. A kid that
	// matches no key is an error wrapping ErrUnknownKID, whose message says
	// which kids the keyring holds; any other error means the keyring could
	// not be read.
	ByKID(ctx context.Context, kid string) (Key, error)
}

// ErrUnknownKID means a header names a key the keyring does not hold.
var ErrUnknownKID = errors.New("unknown chaos key id")

// UnknownKIDError builds the error a Keyring returns when no key has id
// kid: it wraps ErrUnknownKID and lists the kids that where describes does
// hold (each formatted by the caller, e.g. "AWSCURRENT kid=abc").
func UnknownKIDError(kid, where string, have ...string) error {
	if len(have) == 0 {
		return fmt.Errorf("%w: kid %s is not in %s, which holds no keys", ErrUnknownKID, quote(kid), where)
	}
	return fmt.Errorf("%w: kid %s is not in %s, which holds %s", ErrUnknownKID, quote(kid), where, strings.Join(have, ", "))
}
