package chaos

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"sync"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// Key sizes.
const (
	// KeySize is the size of a generated key, and the minimum size of any
	// key.
	KeySize = 32
	// MaxKeySize bounds the size of a key read from a source.
	MaxKeySize = 1024
	// KIDLen is the length of a key id: 8 bytes in unpadded base64url.
	KIDLen = 11
)

// kidPrefix domain-separates the key id hash from any other use of the key.
const kidPrefix = "kosha-chaos-kid:"

// ErrInvalidKey matches errors about key material that cannot be a chaos
// key (bad encoding, too short, degenerate).
var ErrInvalidKey = exitcode.New(exitcode.Usage, "invalid chaos key")

// Key is HMAC-SHA256 key material for chaos headers. It refuses to reveal
// itself: fmt (every verb), encoding/json, encoding.TextMarshaler users and
// log/slog all see "[redacted chaos key kid=...]". The only way out is
// [Key.ExportBase64], for writing the key to a key store.
//
// The zero Key is not a usable key; [Key.IsZero] reports it. Keys are
// immutable and safe for concurrent use; copying a Key is cheap.
type Key struct {
	d *keyData
}

// keyData keeps the raw bytes only inside closures. A Key in an unexported
// struct field is out of reach of its own Format method, and fmt will then
// print the keyData it points to field by field; a func prints as an
// address, and the pooled HMAC states sit behind sync.Pool's unsafe
// pointers, so nothing there reveals key material.
type keyData struct {
	kid  string
	raw  func() []byte // returns the key bytes; never modify them
	pool sync.Pool     // of *macState
}

// macState is a reusable HMAC computation: hmac.Hash resets cheaply to its
// keyed state, and buf/sum avoid per-call allocation.
type macState struct {
	h   hash.Hash
	buf [MaxValueLen]byte
	sum [sha256.Size]byte
}

// NewKey makes a Key from raw key bytes, which it copies. The key must be
// at least [KeySize] bytes and at most [MaxKeySize], and not one byte
// repeated.
func NewKey(raw []byte) (Key, error) {
	if len(raw) < KeySize {
		return Key{}, fmt.Errorf("%w: %d bytes, need at least %d random bytes", ErrInvalidKey, len(raw), KeySize)
	}
	if len(raw) > MaxKeySize {
		return Key{}, fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrInvalidKey, len(raw), MaxKeySize)
	}
	if bytes.Count(raw, raw[:1]) == len(raw) {
		return Key{}, fmt.Errorf("%w: one byte repeated is not random key material", ErrInvalidKey)
	}
	own := append([]byte(nil), raw...)
	d := &keyData{kid: deriveKID(own), raw: func() []byte { return own }}
	d.pool.New = func() any { return &macState{h: hmac.New(sha256.New, own)} }
	return Key{d: d}, nil
}

// DecodeKey decodes the key encoding used by every key source: standard
// base64 (RFC 4648 section 4) of the raw key bytes. ASCII whitespace
// anywhere (a trailing newline, line wrapping) is ignored and missing
// padding is tolerated. Errors never include the input.
func DecodeKey(s string) (Key, error) {
	clean := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r', '\v', '\f':
		default:
			clean = append(clean, c)
		}
	}
	if len(clean) == 0 {
		return Key{}, fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if bytes.ContainsAny(clean, "-_") {
		return Key{}, fmt.Errorf("%w: contains base64url characters ('-' or '_'); keys are standard base64 (+ and /)", ErrInvalidKey)
	}
	enc := base64.StdEncoding.Strict()
	if len(clean)%4 != 0 {
		enc = base64.RawStdEncoding.Strict()
	}
	raw := make([]byte, enc.DecodedLen(len(clean)))
	n, err := enc.Decode(raw, clean)
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			return Key{}, fmt.Errorf("%w: not standard base64 (bad data at offset %d after removing whitespace)", ErrInvalidKey, int64(ce))
		}
		return Key{}, fmt.Errorf("%w: not standard base64", ErrInvalidKey)
	}
	k, err := NewKey(raw[:n])
	clear(raw)
	clear(clean)
	return k, err
}

// GenerateKey returns a fresh [KeySize]-byte key read from r, or from
// crypto/rand when r is nil.
func GenerateKey(r io.Reader) (Key, error) {
	if r == nil {
		r = rand.Reader
	}
	raw := make([]byte, KeySize)
	if _, err := io.ReadFull(r, raw); err != nil {
		return Key{}, fmt.Errorf("generate chaos key: %w", err)
	}
	k, err := NewKey(raw)
	clear(raw)
	if err != nil {
		return Key{}, fmt.Errorf("generate chaos key: %w", err)
	}
	return k, nil
}

// deriveKID is the first 8 bytes of SHA-256("kosha-chaos-kid:" || key),
// unpadded base64url. It identifies the key without revealing anything
// usable about it.
func deriveKID(raw []byte) string {
	h := sha256.New()
	h.Write([]byte(kidPrefix))
	h.Write(raw)
	sum := h.Sum(nil)
	return string(appendB64(nil, sum[:8]))
}

// KID returns the key id carried in headers signed with k, or "" for the
// zero Key.
func (k Key) KID() string {
	if k.d == nil {
		return ""
	}
	return k.d.kid
}

// IsZero reports whether k is the zero Key (no key material).
func (k Key) IsZero() bool { return k.d == nil }

// Len returns the key size in bytes.
func (k Key) Len() int {
	if k.d == nil {
		return 0
	}
	return len(k.d.raw())
}

// Equal reports whether k and o hold the same key material, comparing in
// constant time.
func (k Key) Equal(o Key) bool {
	if k.d == nil || o.d == nil {
		return k.d == o.d
	}
	return subtle.ConstantTimeCompare(k.d.raw(), o.d.raw()) == 1
}

// ExportBase64 returns the key in its storage encoding, standard base64 of
// the raw bytes. It is the one way key material leaves a Key: use it only to
// write the key to a key store, never for output, logs or errors.
func (k Key) ExportBase64() string {
	if k.d == nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(k.d.raw())
}

func (k Key) redacted() string {
	if k.d == nil {
		return "[no chaos key]"
	}
	return "[redacted chaos key kid=" + k.d.kid + "]"
}

// String returns a redacted description naming only the key id.
func (k Key) String() string { return k.redacted() }

// GoString returns the same redacted description as String.
func (k Key) GoString() string { return k.redacted() }

// Format writes the redacted description for every verb, so %x, %v, %+v,
// %#v and %q reveal nothing.
func (k Key) Format(f fmt.State, _ rune) {
	_, _ = io.WriteString(f, k.redacted()) // fmt.Formatter cannot report a write error
}

// MarshalJSON encodes the redacted description as a JSON string.
func (k Key) MarshalJSON() ([]byte, error) {
	return []byte(`"` + k.redacted() + `"`), nil
}

// MarshalText returns the redacted description, for encoders (YAML, TOML,
// flags) that use encoding.TextMarshaler.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.redacted()), nil }

// LogValue makes log/slog record the redacted description.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.redacted()) }

// sum computes HMAC-SHA256(key, msg) into out without allocating in the
// steady state.
func (k Key) sum(out *[sha256.Size]byte, msg string) {
	st := k.d.pool.Get().(*macState)
	st.h.Reset()
	for len(msg) > 0 {
		n := copy(st.buf[:], msg)
		st.h.Write(st.buf[:n])
		msg = msg[n:]
	}
	st.h.Sum(st.sum[:0])
	*out = st.sum
	k.d.pool.Put(st)
}

// checkSum reports whether sig is HMAC-SHA256(key, msg), comparing in
// constant time.
func (k Key) checkSum(msg string, sig *[sha256.Size]byte) bool {
	var want [sha256.Size]byte
	k.sum(&want, msg)
	return hmac.Equal(want[:], sig[:])
}
