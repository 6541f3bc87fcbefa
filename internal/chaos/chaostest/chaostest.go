// Package chaostest holds what tests of chaos headers share: a fixed
// in-memory keyring, a header signed in one call and a check's result
// read off a report (tests only).
package chaostest

import (
	"context"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/chaos"
)

// KeySet is a fixed in-memory [chaos.Keyring]: its first key signs, and
// every key verifies. Lookups do not allocate, so the verifier's
// allocation test and benchmark measure the verifier alone.
type KeySet struct {
	keys []chaos.Key
}

var _ chaos.Keyring = (*KeySet)(nil)

// NewKeySet returns a KeySet whose current key is current and which also
// verifies headers signed with any of previous (typically the key it
// replaced in the last rotation). Zero keys in previous are skipped.
func NewKeySet(current chaos.Key, previous ...chaos.Key) (*KeySet, error) {
	if current.IsZero() {
		return nil, fmt.Errorf("new key set: %w: no current key", chaos.ErrInvalidKey)
	}
	ks := &KeySet{keys: []chaos.Key{current}}
	for _, k := range previous {
		if !k.IsZero() {
			ks.keys = append(ks.keys, k)
		}
	}
	return ks, nil
}

// Current returns the signing key.
func (s *KeySet) Current(context.Context) (chaos.Key, error) { return s.keys[0], nil }

// ByKID returns the key with id kid.
func (s *KeySet) ByKID(_ context.Context, kid string) (chaos.Key, error) {
	for _, k := range s.keys {
		if k.KID() == kid {
			return k, nil
		}
	}
	return chaos.Key{}, chaos.UnknownKIDError(kid, "this key set", s.kids()...)
}

func (s *KeySet) kids() []string {
	kids := make([]string, len(s.keys))
	for i, k := range s.keys {
		kids[i] = k.KID()
	}
	return kids
}

// Sign is [chaos.SignHeader] returning the header's value, the form a
// request carries.
func Sign(key chaos.Key, f chaos.Fields) (string, error) {
	h, err := chaos.SignHeader(key, f)
	if err != nil {
		return "", err
	}
	return h.Value(), nil
}

// Result returns the result of check c in r (skipped when r has none).
func Result(r *chaos.Report, c chaos.Check) chaos.CheckResult {
	for _, cr := range r.Checks {
		if cr.Check == c {
			return cr
		}
	}
	return chaos.CheckResult{Check: c, Outcome: chaos.OutcomeSkip}
}
