package chaos

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
)

// ErrTTL matches a mint request whose ttl is outside [MinTTL, MaxTTL]. The
// cap is hard: a longer ttl is refused, never clamped.
var ErrTTL = exitcode.New(exitcode.Usage, "chaos header ttl out of range")

// JTIBytes is the number of random bytes in a minted jti (22 base64url
// characters).
const JTIBytes = 16

// MinterOptions configure a [Minter]. The zero value uses the wall clock,
// crypto/rand and [DefaultTargets].
type MinterOptions struct {
	// Clock supplies the issue time. Nil means the wall clock.
	Clock clock.Clock
	// Rand supplies jti bytes. Nil means crypto/rand.
	Rand io.Reader
	// Targets are the targets the context allows. Nil means
	// [DefaultTargets].
	Targets []Target
}

// Minter mints signed headers with the current key of a keyring. It is safe
// for concurrent use.
type Minter struct {
	keys    Keyring
	clock   clock.Clock
	rand    io.Reader
	targets []Target
}

// NewMinter returns a Minter signing with keys.Current.
func NewMinter(keys Keyring, opts MinterOptions) (*Minter, error) {
	if keys == nil {
		return nil, errors.New("new chaos minter: no keyring")
	}
	m := &Minter{keys: keys, clock: opts.Clock, rand: opts.Rand}
	if m.clock == nil {
		m.clock = clock.Real{}
	}
	if m.rand == nil {
		m.rand = rand.Reader
	}
	targets, err := checkTargets(opts.Targets)
	if err != nil {
		return nil, fmt.Errorf("new chaos minter: %w", err)
	}
	m.targets = targets
	return m, nil
}

// MintRequest says what header to mint. It mirrors the flags of
// `koshactl chaos sign`.
type MintRequest struct {
	// Target is the downstream to inject into; it must be one of the
	// minter's targets.
	Target Target
	// Fault is the failure to inject.
	Fault Fault
	// Ms is the added latency for FaultLatency (required, 1..60000), and
	// must be zero otherwise.
	Ms int
	// P is the per-call probability. Zero means 1.
	P Prob
	// TTL is how long the header lives. Zero means [DefaultTTL]; more than
	// [MaxTTL] is an error. exp is the issue time's whole second plus the
	// ttl's whole seconds, so the header lives at most TTL.
	TTL time.Duration
}

// Minted is a freshly signed header and what an audit record needs.
type Minted struct {
	// Header is the signed header; Header.Value() is what goes on the wire.
	Header Header
	// IssuedAt is the minter clock's now at signing.
	IssuedAt time.Time
	// TTL is the ttl requested (after defaulting).
	TTL time.Duration
}

// Mint validates req, fills its defaults and signs a header with a fresh
// random jti under the keyring's current key.
func (m *Minter) Mint(ctx context.Context, req MintRequest) (*Minted, error) {
	if req.P == 0 {
		req.P = ProbOne
	}
	if req.TTL == 0 {
		req.TTL = DefaultTTL
	}
	if req.TTL > MaxTTL {
		return nil, fmt.Errorf("mint chaos header: %w: ttl %s exceeds the %s cap; the data plane refuses headers that live longer", ErrTTL, human.Duration(req.TTL), human.Duration(MaxTTL))
	}
	if req.TTL < MinTTL {
		return nil, fmt.Errorf("mint chaos header: %w: ttl %s is below the %s minimum", ErrTTL, human.Duration(req.TTL), human.Duration(MinTTL))
	}
	if _, err := ParseTarget(string(req.Target)); err != nil {
		return nil, fmt.Errorf("mint chaos header: %w", err)
	}
	if !slices.Contains(m.targets, req.Target) {
		return nil, fmt.Errorf("mint chaos header: %w: %s", ErrTargetNotAllowed, targetNotAllowed(req.Target, m.targets).Reason)
	}
	var jti [JTIBytes]byte
	if _, err := io.ReadFull(m.rand, jti[:]); err != nil {
		return nil, fmt.Errorf("mint chaos header: read random jti: %w", err)
	}
	now := m.clock.Now()
	f := Fields{
		Target: req.Target,
		Fault:  req.Fault,
		Ms:     req.Ms,
		P:      req.P,
		IAT:    now.Unix(),
		Exp:    now.Unix() + int64(req.TTL/time.Second),
		JTI:    string(appendB64(nil, jti[:])),
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("mint chaos header: %w", err)
	}
	key, err := m.keys.Current(ctx)
	if err != nil {
		return nil, fmt.Errorf("mint chaos header: %w", err)
	}
	h, err := SignHeader(key, f)
	if err != nil {
		return nil, err
	}
	return &Minted{Header: h, IssuedAt: now, TTL: req.TTL}, nil
}

// Value returns the header value.
func (m *Minted) Value() string { return m.Header.Value() }

// Line returns "X-Kosha-Chaos: <value>" (output format header).
func (m *Minted) Line() string { return m.Header.Line() }

// CurlArgs returns the curl arguments that send the header (output format
// curl): -H 'X-Kosha-Chaos: <value>'. The grammar admits no quote
// characters, so single-quoting is safe in any POSIX shell.
func (m *Minted) CurlArgs() string { return "-H '" + m.Header.Line() + "'" }

// MarshalJSON encodes the header for output format json: the header name
// and value, and its fields spelled out.
func (m *Minted) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Header    string    `json:"header"`
		Value     string    `json:"value"`
		Fields    Header    `json:"fields"`
		IssuedAt  time.Time `json:"issued_at"`
		ExpiresAt time.Time `json:"expires_at"`
		TTL       string    `json:"ttl"`
	}{HeaderName, m.Value(), m.Header, m.IssuedAt.UTC(), m.Header.ExpTime().UTC(), m.TTL.String()})
}

// Record returns the audit record of this mint.
func (m *Minted) Record() MintRecord {
	return MintRecord{
		KID:       m.Header.KID,
		Target:    m.Header.Target,
		Fault:     m.Header.Fault,
		Ms:        m.Header.Ms,
		P:         m.Header.P,
		IAT:       m.Header.IAT,
		Exp:       m.Header.Exp,
		ExpiresAt: m.Header.ExpTime().UTC(),
		IssuedAt:  m.IssuedAt.UTC(),
		TTL:       m.TTL.String(),
		JTI:       m.Header.JTI,
	}
}

// MintRecord is what the audit log keeps about a mint: the signed fields,
// expiry and jti. It never holds the signature (which would make the audit
// log a source of usable headers) nor key material. Who minted is the
// caller's to add.
type MintRecord struct {
	// KID, Target, Fault, Ms, P, IAT, Exp and JTI are the signed fields.
	KID    string `json:"kid"`
	Target Target `json:"target"`
	Fault  Fault  `json:"fault"`
	Ms     int    `json:"ms,omitempty"`
	P      Prob   `json:"p"`
	IAT    int64  `json:"iat,omitempty"`
	Exp    int64  `json:"exp"`
	JTI    string `json:"jti"`
	// ExpiresAt is Exp as a time, for readers of the audit log.
	ExpiresAt time.Time `json:"expires_at"`
	// IssuedAt is when the header was minted.
	IssuedAt time.Time `json:"issued_at"`
	// TTL is the ttl requested, as a Go duration string.
	TTL string `json:"ttl"`
}

// Rejection is what an audit record keeps about a header the data plane
// ignored: which check failed and why, and whatever fields parsed. Like
// [MintRecord] it never holds the signature, the raw value or key material.
type Rejection struct {
	// Check, Field and Reason describe the first failed check.
	Check  Check  `json:"check"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
	// KID, Target, Fault, IAT, Exp and JTI are what parsed of the header;
	// empty when the syntax check failed (IAT also for a v=1 header).
	KID    string `json:"kid,omitempty"`
	Target Target `json:"target,omitempty"`
	Fault  string `json:"fault,omitempty"`
	IAT    int64  `json:"iat,omitempty"`
	Exp    int64  `json:"exp,omitempty"`
	JTI    string `json:"jti,omitempty"`
	// Freeze names the freeze that refused the header (check freeze).
	Freeze *FreezeRef `json:"freeze,omitempty"`
}

// NewRejection builds the audit record for a header that [Verifier.Verify]
// rejected with err, from the header it returned alongside. A keyring
// failure (not a *CheckError) is recorded under the kid check.
func NewRejection(h Header, err error) Rejection {
	r := Rejection{Check: CheckKID, Reason: "key lookup failed"}
	var ce *CheckError
	if errors.As(err, &ce) {
		r.Check, r.Field, r.Reason = ce.Check, ce.Field, ce.Reason
	}
	var fr *FreezeRefusal
	if errors.As(err, &fr) {
		ref := fr.Freeze
		r.Freeze = &ref
	}
	if h.value != "" || h.KID != "" {
		r.KID, r.Target, r.IAT, r.Exp, r.JTI = h.KID, h.Target, h.IAT, h.Exp, h.JTI
		if h.Fault.Valid() {
			r.Fault = h.Fault.String()
		}
	}
	return r
}
