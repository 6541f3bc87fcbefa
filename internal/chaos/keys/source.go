package keys

import (
	"context"
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// Source is a chaos key source as `koshactl chaos` commands use it.
type Source interface {
	chaos.Keyring
	// Keys returns every key headers are verified against, the signing key
	// first, each with its stage. `chaos key id` prints them.
	Keys(ctx context.Context) ([]Staged, error)
	// Describe names the source for messages, e.g.
	// `Secrets Manager secret "kosha/chaos/dev"` or `key file /path`. It
	// never includes key material.
	Describe() string
}

// Rotator is implemented by sources that can replace their signing key.
type Rotator interface {
	// Rotate stores a fresh random key as the signing key and keeps the one
	// it replaces as the previous key, so headers signed before the
	// rotation keep verifying until they expire.
	Rotate(ctx context.Context, opts RotateOptions) (Rotation, error)
}

// RotateOptions tune a rotation.
type RotateOptions struct {
	// Force rotates even when the current key is too young to replace
	// safely (Secrets Manager: younger than its MinRotationAge). Default
	// false: such a rotation is refused with ErrTooSoon.
	Force bool
}

// Stage names. Secrets Manager uses its own staging labels; the local
// source uses the same words so output reads alike everywhere.
const (
	// StageCurrent is the signing key (Secrets Manager's AWSCURRENT).
	StageCurrent = "AWSCURRENT"
	// StagePrevious is the key the last rotation replaced (AWSPREVIOUS).
	StagePrevious = "AWSPREVIOUS"
)

// Staged is a key with its stage.
type Staged struct {
	// Stage is StageCurrent or StagePrevious.
	Stage string
	// Key is the key; it prints redacted.
	Key chaos.Key
	// VersionID is the Secrets Manager version id, when there is one.
	VersionID string
	// Created is when the version was created, when the source knows.
	Created time.Time
}

// Rotation reports what Rotate did.
type Rotation struct {
	// Previous is the key that was current before (and is now previous),
	// zero if there was none or its value was not a key.
	Previous chaos.Key
	// PreviousVersionID is its Secrets Manager version, when there is one.
	PreviousVersionID string
	// Retired is the key that was previous before and verifies no more,
	// zero if there was none.
	Retired chaos.Key
	// Current is the new key.
	Current chaos.Key
	// VersionID is the new Secrets Manager version id, when there is one.
	VersionID string
	// Created is when the new key was stored, when the source knows.
	Created time.Time
	// SignsFrom is when the new key starts signing (Created plus the
	// propagation delay); zero when it signs at once.
	SignsFrom time.Time
}

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoKey: the source holds no key (unset variable, missing secret
	// value or file).
	ErrNoKey = exitcode.New(exitcode.NotFound, "no chaos key")
	// ErrAccessDenied: the caller may not read or write the key.
	ErrAccessDenied = exitcode.New(exitcode.Auth, "access to chaos key denied")
	// ErrThrottled: the key store throttled the request past the retries.
	ErrThrottled = exitcode.New(exitcode.Unavailable, "chaos key store throttled")
	// ErrUnavailable: the key store could not be reached, or answered with a
	// server error.
	ErrUnavailable = exitcode.New(exitcode.Unavailable, "chaos key store unavailable")
	// ErrCredentials: the key store rejected the caller's credentials.
	ErrCredentials = exitcode.New(exitcode.Auth, "chaos key store rejected credentials")
	// ErrInsecureFile: a key file is readable by group or others.
	ErrInsecureFile = exitcode.New(exitcode.Usage, "chaos key file permissions too open")
	// ErrNotRotatable: the source cannot rotate (key files, variables).
	ErrNotRotatable = exitcode.New(exitcode.Usage, "chaos key source cannot rotate")
	// ErrConflict: another rotation changed the key while this one ran;
	// this one changed nothing.
	ErrConflict = exitcode.New(exitcode.Conflict, "chaos key rotated by someone else meanwhile")
	// ErrTooSoon: the current key is too young to replace without
	// breaking headers it or its predecessor signed.
	ErrTooSoon = exitcode.New(exitcode.Refused, "chaos key rotated too recently")
)

// oneKey is Keys of a source holding one key (a file, a variable): its
// current key, read afresh.
func oneKey(ctx context.Context, src Source) ([]Staged, error) {
	k, err := src.Current(ctx)
	if err != nil {
		return nil, err
	}
	return []Staged{{Stage: StageCurrent, Key: k}}, nil
}

// keysByKID is ByKID of a source that reads all its keys at once (Keys).
func keysByKID(ctx context.Context, src Source, kid string) (chaos.Key, error) {
	staged, err := src.Keys(ctx)
	if err != nil {
		return chaos.Key{}, err
	}
	return byKID(staged, kid, src.Describe())
}

// byKID finds kid among staged keys, or returns chaos.UnknownKIDError
// listing the stages and kids it does hold.
func byKID(staged []Staged, kid, where string) (chaos.Key, error) {
	have := make([]string, 0, len(staged))
	for _, s := range staged {
		if s.Key.KID() == kid {
			return s.Key, nil
		}
		have = append(have, fmt.Sprintf("%s kid %s", s.Stage, s.Key.KID()))
	}
	return chaos.Key{}, chaos.UnknownKIDError(kid, where, have...)
}
