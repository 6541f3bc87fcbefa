package chaos

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/suggest"
)

// Limits of the wire format. They are part of the contract
// (docs/contracts/chaos-header.md): a verifier in any language enforces the
// same numbers.
const (
	// MaxTTL is the hard cap on how far ahead of now a header may expire.
	// Minting refuses a longer ttl; verifiers refuse an exp further ahead
	// (plus the clock-skew allowance, see [DefaultSkew]).
	MaxTTL = 15 * time.Minute
	// DefaultTTL is the ttl a mint uses when the request leaves it zero.
	DefaultTTL = 5 * time.Minute
	// MinTTL is the shortest ttl a mint accepts. exp has whole-second
	// resolution, so anything shorter could yield a header already expired.
	MinTTL = time.Second
	// DefaultSkew is the clock-skew allowance a [Verifier] adds to the cap
	// when its options leave Skew zero: a header minted on a machine whose
	// clock runs up to this much ahead of the verifier's still passes the cap.
	DefaultSkew = 30 * time.Second
	// MaxSkew bounds the skew allowance a Verifier may be configured with.
	MaxSkew = 2 * time.Minute

	// MinMs and MaxMs bound the added latency of a latency fault, in
	// milliseconds.
	MinMs = 1
	MaxMs = 60000

	// MaxTargetLen is the longest target name.
	MaxTargetLen = 63
	// MinJTILen and MaxJTILen bound the length of a jti.
	MinJTILen = 16
	MaxJTILen = 64
	// MaxExpDigits bounds the digits of exp (11 digits reach the year 5138).
	MaxExpDigits = 11
	// MaxValueLen is the longest header value a parser accepts. The longest
	// valid value is shorter; the bound keeps hostile input cheap to reject.
	MaxValueLen = 512
)

// Target names a downstream the data plane can inject faults into. Its
// syntax is a lowercase DNS label: 1 to 63 characters of a-z, 0-9 and '-',
// starting and ending with a letter or digit. Which targets a context allows
// is configuration (see [DefaultTargets]); the wire format only fixes the
// syntax.
type Target string

// The targets of the design (LLD section 9), allowed when a context
// configures none.
const (
	TargetCoreAPI      Target = "core-api"
	TargetScreeningSim Target = "screening-sim"
	TargetOpenAI       Target = "openai"
	TargetPostgres     Target = "postgres"
)

// DefaultTargets returns the targets a context allows when its
// configuration names none: core-api, screening-sim, openai, postgres. The
// slice is a fresh copy.
func DefaultTargets() []Target {
	return []Target{TargetCoreAPI, TargetScreeningSim, TargetOpenAI, TargetPostgres}
}

// ParseTarget checks the syntax of s and returns it as a Target.
func ParseTarget(s string) (Target, error) {
	if p := targetProblem(s); p != "" {
		return "", &FieldError{Field: "target", Problem: p}
	}
	return Target(s), nil
}

// String returns the target name.
func (t Target) String() string { return string(t) }

// Set parses s into t, so *Target can serve as a command-line flag value.
func (t *Target) Set(s string) error {
	v, err := ParseTarget(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Type names the flag value type for help text.
func (*Target) Type() string { return "target" }

func targetProblem(s string) string {
	if s == "" {
		return "empty"
	}
	if len(s) > MaxTargetLen {
		return fmt.Sprintf("longer than %d characters", MaxTargetLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-':
			if i == 0 || i == len(s)-1 {
				return fmt.Sprintf("%s must start and end with a letter or digit", quote(s))
			}
		default:
			return fmt.Sprintf("%s has %s at offset %d; a target is lowercase letters, digits and '-'", quote(s), describeByte(c), i)
		}
	}
	return ""
}

// Fault is the kind of failure a header injects.
type Fault uint8

// The faults of the design. The zero Fault is invalid.
const (
	// FaultLatency delays the call by the header's ms before making it.
	FaultLatency Fault = iota + 1
	// FaultError fails the call with a 503.
	FaultError
	// FaultTimeout hangs the call past its attempt cap.
	FaultTimeout
	// FaultReset fails the call with a connection error.
	FaultReset
)

var faultNames = [...]string{FaultLatency: "latency", FaultError: "error", FaultTimeout: "timeout", FaultReset: "reset"}

// Faults lists every fault in wire order of preference (latency, error,
// timeout, reset).
func Faults() []Fault { return []Fault{FaultLatency, FaultError, FaultTimeout, FaultReset} }

// ParseFault returns the fault named s (exactly latency, error, timeout or
// reset).
func ParseFault(s string) (Fault, error) {
	for f := FaultLatency; f <= FaultReset; f++ {
		if s == faultNames[f] {
			return f, nil
		}
	}
	return 0, &FieldError{Field: "fault", Problem: fmt.Sprintf("%s is not a fault; want one of latency, error, timeout, reset", quote(s))}
}

// Valid reports whether f is one of the defined faults.
func (f Fault) Valid() bool { return f >= FaultLatency && f <= FaultReset }

// String returns the wire name of f, or "Fault(n)" for an invalid value.
func (f Fault) String() string {
	if f.Valid() {
		return faultNames[f]
	}
	return "Fault(" + strconv.Itoa(int(f)) + ")"
}

// Describe says in a few words what the data plane does for f.
func (f Fault) Describe() string {
	switch f {
	case FaultLatency:
		return "adds ms of latency before the call"
	case FaultError:
		return "fails the call with 503"
	case FaultTimeout:
		return "hangs the call past its attempt cap"
	case FaultReset:
		return "fails the call with a connection error"
	}
	return "unknown fault"
}

// Set parses s into f, so *Fault can serve as a command-line flag value.
func (f *Fault) Set(s string) error {
	v, err := ParseFault(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// Type names the flag value type for help text.
func (*Fault) Type() string { return "fault" }

// MarshalText encodes f as its wire name.
func (f Fault) MarshalText() ([]byte, error) {
	if !f.Valid() {
		return nil, fmt.Errorf("marshal fault: invalid value %d", uint8(f))
	}
	return []byte(faultNames[f]), nil
}

// UnmarshalText decodes a wire name.
func (f *Fault) UnmarshalText(b []byte) error { return f.Set(string(b)) }

// Prob is a per-call probability in fixed-point units of 1/10000, so that
// "0.5" is exactly 5000 and every valid value formats back to the same
// decimal. Valid values are 1 (0.0001) through [ProbOne] (1).
type Prob uint16

// ProbOne is probability 1: the fault applies to every call.
const ProbOne Prob = 10000

// Valid reports whether 0 < p <= 1.
func (p Prob) Valid() bool { return p >= 1 && p <= ProbOne }

// Float64 returns p as a float, for display and for the data plane's dice
// roll.
func (p Prob) Float64() float64 { return float64(p) / float64(ProbOne) }

// String returns the canonical decimal of p as it appears on the wire: "1"
// for one, otherwise "0." followed by one to four digits without trailing
// zeros ("0.5", "0.25", "0.0001"). The invalid zero value prints "0".
func (p Prob) String() string {
	var b [8]byte
	return string(p.appendTo(b[:0]))
}

func (p Prob) appendTo(dst []byte) []byte {
	switch {
	case p == 0:
		return append(dst, '0')
	case p >= ProbOne:
		return append(dst, '1')
	}
	frac := [4]byte{
		byte('0' + p/1000),
		byte('0' + p/100%10),
		byte('0' + p/10%10),
		byte('0' + p%10),
	}
	n := 4
	for frac[n-1] == '0' {
		n--
	}
	dst = append(dst, '0', '.')
	return append(dst, frac[:n]...)
}

// ParseProb parses a probability as an operator types it: a decimal in
// (0, 1] with at most four decimals. It is more lenient than the wire
// grammar (it accepts "0.50", ".5", "1.0" and canonicalises them) but never
// rounds: "0.12345" is an error, as are exponents, signs, 0 and anything
// above 1.
func ParseProb(s string) (Prob, error) {
	p, problem := parseProbLenient(s)
	if problem != "" {
		return 0, &FieldError{Field: "p", Problem: problem}
	}
	return p, nil
}

func parseProbLenient(s string) (Prob, string) {
	if s == "" {
		return 0, "empty"
	}
	if strings.ContainsAny(s, "eE") {
		return 0, fmt.Sprintf("%s: exponent notation not allowed", quote(s))
	}
	if s[0] == '+' || s[0] == '-' {
		return 0, fmt.Sprintf("%s: sign not allowed; p is in (0, 1]", quote(s))
	}
	intPart, fracPart, hasDot := strings.Cut(s, ".")
	if !allDigits(intPart) || !allDigits(fracPart) || (intPart == "" && fracPart == "") || (hasDot && fracPart == "") {
		return 0, fmt.Sprintf("%s is not a decimal number", quote(s))
	}
	trimmed := strings.TrimRight(fracPart, "0")
	if len(trimmed) > 4 {
		return 0, fmt.Sprintf("%s has more than 4 decimals", quote(s))
	}
	intPart = strings.TrimLeft(intPart, "0")
	var units int
	switch intPart {
	case "":
	case "1":
		units = int(ProbOne)
	default:
		return 0, fmt.Sprintf("%s is above 1", quote(s))
	}
	mult := 1000
	for i := 0; i < len(trimmed); i++ {
		units += int(trimmed[i]-'0') * mult
		mult /= 10
	}
	switch {
	case units == 0:
		return 0, fmt.Sprintf("%s is not above 0; a header with p=0 would do nothing", quote(s))
	case units > int(ProbOne):
		return 0, fmt.Sprintf("%s is above 1", quote(s))
	}
	return Prob(units), ""
}

// Set parses s with [ParseProb], so *Prob can serve as a command-line flag
// value.
func (p *Prob) Set(s string) error {
	v, err := ParseProb(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Type names the flag value type for help text.
func (*Prob) Type() string { return "probability" }

// MarshalJSON encodes p as a JSON number with the exact canonical decimal.
func (p Prob) MarshalJSON() ([]byte, error) { return p.appendTo(nil), nil }

// Fields are the signed contents of a header, apart from the key id (which
// comes from the signing key).
type Fields struct {
	// Target is the downstream to inject into.
	Target Target
	// Fault is the failure to inject.
	Fault Fault
	// Ms is the added latency in milliseconds. It must be set (1..60000) for
	// FaultLatency and zero for every other fault.
	Ms int
	// P is the per-call probability.
	P Prob
	// IAT is when the header was issued, in unix seconds: set, the header
	// is a v=2 header and exp is after it by at most [MaxTTL]; zero, a v=1
	// header without the field (an older signer's). The freeze rule reads
	// it through [Fields.Issued].
	IAT int64
	// Exp is the expiry in unix seconds.
	Exp int64
	// JTI is the header's random id, 16 to 64 base64url characters.
	JTI string
}

// ExpTime returns Exp as a time.
func (f Fields) ExpTime() time.Time { return time.Unix(f.Exp, 0) }

// Version returns the wire version the fields are signed as: 2 with an
// IAT, 1 without.
func (f Fields) Version() int {
	if f.IAT != 0 {
		return Version2
	}
	return Version1
}

// Issued returns the earliest instant the header can have been minted, in
// unix seconds: its IAT, or for a v=1 header (no IAT) exp minus [MaxTTL],
// since no signer mints a header that lives longer. The freeze rule
// (docs/contracts/freeze.md) voids a header issued before the end of the
// fleet's last freeze.
func (f Fields) Issued() int64 {
	if f.IAT != 0 {
		return f.IAT
	}
	return f.Exp - int64(MaxTTL/time.Second)
}

// Validate checks every field against the wire grammar and returns a
// *FieldError naming the first that fails. It does not check the target
// against a context's allowed targets, nor exp against a clock.
func (f Fields) Validate() error {
	if p := targetProblem(string(f.Target)); p != "" {
		return &FieldError{Field: "target", Problem: p}
	}
	if !f.Fault.Valid() {
		return &FieldError{Field: "fault", Problem: "not set; want one of latency, error, timeout, reset"}
	}
	if f.Fault == FaultLatency {
		if f.Ms < MinMs || f.Ms > MaxMs {
			return &FieldError{Field: "ms", Problem: fmt.Sprintf("%d is outside %d..%d; fault=latency needs the added latency in milliseconds", f.Ms, MinMs, MaxMs)}
		}
	} else if f.Ms != 0 {
		return &FieldError{Field: "ms", Problem: fmt.Sprintf("only applies to fault=latency, not fault=%s", f.Fault)}
	}
	if !f.P.Valid() {
		return &FieldError{Field: "p", Problem: fmt.Sprintf("%d/10000 is outside (0, 1]", int(f.P))}
	}
	if f.IAT < 0 || f.IAT > maxExp {
		return &FieldError{Field: "iat", Problem: fmt.Sprintf("%d is not a unix time in 1..%d (0: none, a v=1 header)", f.IAT, maxExp)}
	}
	if f.Exp <= 0 || f.Exp > maxExp {
		return &FieldError{Field: "exp", Problem: fmt.Sprintf("%d is not a unix time in 1..%d", f.Exp, maxExp)}
	}
	if f.IAT != 0 {
		if p := lifetimeProblem(f.IAT, f.Exp); p != "" {
			return &FieldError{Field: "exp", Problem: p}
		}
	}
	if p := jtiProblem(f.JTI); p != "" {
		return &FieldError{Field: "jti", Problem: p}
	}
	return nil
}

const maxExp = 99999999999 // MaxExpDigits nines

func jtiProblem(s string) string {
	if len(s) < MinJTILen || len(s) > MaxJTILen {
		return fmt.Sprintf("must be %d to %d base64url characters, got %d", MinJTILen, MaxJTILen, len(s))
	}
	if i := firstNonB64(s); i >= 0 {
		return fmt.Sprintf("%s at offset %d is not a base64url character (A-Z a-z 0-9 - _)", describeByte(s[i]), i)
	}
	return ""
}

// FieldError says which field of a header is malformed and why. A Field of
// "" means the value as a whole (empty, too long). Every FieldError matches
// [ErrSyntax] with errors.Is.
type FieldError struct {
	// Field is the wire name of the offending field (v, kid, target, fault,
	// ms, p, iat, exp, jti, sig), or "" for the value as a whole.
	Field string
	// Problem says what is wrong, in words an operator can act on.
	Problem string
}

// Error returns "chaos header field F: problem".
func (e *FieldError) Error() string {
	if e.Field == "" {
		return "chaos header: " + e.Problem
	}
	return "chaos header field " + e.Field + ": " + e.Problem
}

// Is makes every FieldError match ErrSyntax.
func (e *FieldError) Is(target error) bool { return target == ErrSyntax }

// ErrSyntax matches every *FieldError: the value does not follow the
// grammar.
var ErrSyntax = errors.New("malformed chaos header")

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// quote renders attacker-controlled text safely in an error: Go-quoted,
// truncated to 40 bytes.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}

func describeByte(c byte) string {
	switch {
	case c == ' ':
		return "a space"
	case c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
		return "whitespace " + strconv.QuoteRune(rune(c))
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("control byte 0x%02x", c)
	case c >= 0x80:
		return fmt.Sprintf("non-ASCII byte 0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

// TargetNames returns the names of ts, or of the default targets when ts is
// nil (a context that configures none).
func TargetNames(ts []Target) []string {
	if ts == nil {
		ts = DefaultTargets()
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = string(t)
	}
	return names
}

// ClosestTarget returns the target of ts (nil: the defaults) nearest to
// name, ignoring case, hyphens and underscores, within two edits
// (screnning-sim is near screening-sim); "" if none is near. A suggestion
// for a message, never a target to use.
func ClosestTarget(name string, ts []Target) string {
	return suggest.Closest(name, TargetNames(ts), 3, func(s string) string {
		return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s))
	})
}

// JoinTargets renders [TargetNames] for messages: "core-api, openai".
func JoinTargets(ts []Target) string { return strings.Join(TargetNames(ts), ", ") }
