package keys

import (
	"context"
	"fmt"
	"os"

	"github.com/kosha-platform/koshactl/internal/chaos"
)

// DefaultEnvVar is the environment variable a context reads its chaos key
// from when it names no other.
const DefaultEnvVar = "KOSHA_CHAOS_KEY"

// Env is a key held in an environment variable as standard base64. It holds
// one key and does not rotate. (A key source named for where the key is, like
// [Local] and [SecretsManager]; not a dependency bag.)
type Env struct {
	name   string
	lookup func(string) (string, bool)
}

var _ Source = (*Env)(nil)

// NewEnv returns the source reading variable name (DefaultEnvVar if
// empty) from the process environment.
func NewEnv(name string) *Env {
	if name == "" {
		name = DefaultEnvVar
	}
	return &Env{name: name, lookup: os.LookupEnv}
}

// NewEnvLookup is NewEnv with an injected lookup function (os.LookupEnv's
// signature; nil is os.LookupEnv), for callers that carry their own
// environment.
func NewEnvLookup(name string, lookup func(string) (string, bool)) *Env {
	e := NewEnv(name)
	if lookup != nil {
		e.lookup = lookup
	}
	return e
}

// Current decodes the variable.
func (e *Env) Current(context.Context) (chaos.Key, error) {
	v, ok := e.lookup(e.name)
	if !ok {
		return chaos.Key{}, fmt.Errorf("read chaos key: %w: environment variable %s is not set", ErrNoKey, e.name)
	}
	if v == "" {
		return chaos.Key{}, fmt.Errorf("read chaos key: %w: environment variable %s is empty", ErrNoKey, e.name)
	}
	k, err := chaos.DecodeKey(v)
	if err != nil {
		return chaos.Key{}, fmt.Errorf("read chaos key from environment variable %s: %w", e.name, err)
	}
	return k, nil
}

// ByKID decodes the variable and returns the key if its id is kid.
func (e *Env) ByKID(ctx context.Context, kid string) (chaos.Key, error) {
	return keysByKID(ctx, e, kid)
}

// Keys returns the variable's key as the current key.
func (e *Env) Keys(ctx context.Context) ([]Staged, error) { return oneKey(ctx, e) }

// Describe returns "environment variable NAME".
func (e *Env) Describe() string { return "environment variable " + e.name }
