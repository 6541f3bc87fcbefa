package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Keyring is where signing and verification keys come from. Implementations
// live in internal/chaos/keys (Secrets Manager, file, environment variable,
// local generated key); [KeySet] is an in-memory one.
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

// KeySet is a fixed in-memory [Keyring]: its first key signs, and every key
// verifies. Lookups do not allocate, so a data plane can resolve its keys
// once and verify every request against a KeySet.
type KeySet struct {
	keys []Key
}

var _ Keyring = (*KeySet)(nil)

// NewKeySet returns a KeySet whose current key is current and which also
// verifies headers signed with any of previous (typically the key it
// replaced in the last rotation). Zero keys in previous are skipped.
func NewKeySet(current Key, previous ...Key) (*KeySet, error) {
	if current.IsZero() {
		return nil, fmt.Errorf("new key set: %w: no current key", ErrInvalidKey)
	}
	ks := &KeySet{keys: []Key{current}}
	for _, k := range previous {
		if !k.IsZero() {
			ks.keys = append(ks.keys, k)
		}
	}
	return ks, nil
}

// Current returns the signing key.
func (s *KeySet) Current(context.Context) (Key, error) { return s.keys[0], nil }

// ByKID returns the key with id kid.
func (s *KeySet) ByKID(_ context.Context, kid string) (Key, error) {
	for _, k := range s.keys {
		if k.d.kid == kid {
			return k, nil
		}
	}
	return Key{}, UnknownKIDError(kid, "this key set", s.kids()...)
}

// Keys returns the keys of s, the current one first.
func (s *KeySet) Keys() []Key { return append([]Key(nil), s.keys...) }

func (s *KeySet) kids() []string {
	kids := make([]string, len(s.keys))
	for i, k := range s.keys {
		kids[i] = k.KID()
	}
	return kids
}

// UnknownKIDError builds the error a Keyring returns when no key has id
// kid: it wraps ErrUnknownKID and lists the kids that where describes does
// hold (each formatted by the caller, e.g. "AWSCURRENT kid=abc").
func UnknownKIDError(kid, where string, have ...string) error {
	if len(have) == 0 {
		return fmt.Errorf("%w: kid %s is not in %s, which holds no keys", ErrUnknownKID, quote(kid), where)
	}
	return fmt.Errorf("%w: kid %s is not in %s, which holds %s", ErrUnknownKID, quote(kid), where, strings.Join(have, ", "))
}
