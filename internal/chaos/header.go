package chaos

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// HeaderName is the HTTP header that carries a chaos header value.
const HeaderName = "X-Kosha-Chaos"

// HeaderValue returns the one chaos header value a request carries: "" when
// it has none. A request with more than one X-Kosha-Chaos field fails the
// syntax check, and none of its values is honored: which of several a proxy,
// a framework or a verifier would keep differs (Go's Header.Get keeps the
// first, others the last or a comma-joined list), so the contract keeps
// none (docs/contracts/chaos-header.md). The first value is returned with
// the error, for the record of the rejection.
func HeaderValue(h http.Header) (string, error) {
	vs := h.Values(HeaderName)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return vs[0], &CheckError{Check: CheckSyntax, Reason: fmt.Sprintf("the request carries %d %s fields; exactly one is honored, so none of these is: send one", len(vs), HeaderName),
		err: ErrRepeatedHeader}
}

// ErrRepeatedHeader is wrapped by [HeaderValue]'s error for a request with
// more than one chaos header field.
var ErrRepeatedHeader = errors.New("more than one chaos header")

// The wire format versions this package speaks (the v field). A v=2 header
// carries iat, the instant it was issued, which the freeze rule compares
// with the end of the fleet's last freeze (docs/contracts/freeze.md); a
// v=1 header has none, and counts as issued at exp minus [MaxTTL], the
// earliest it can have been minted. [SignHeader] writes v=2 when its fields
// have an IAT, v=1 otherwise; a [Minter] always sets one.
const (
	Version1 = 1
	Version2 = 2
	// Version is the newest version, the one a Minter mints.
	Version = Version2
)

// The wire names of the fields, in their fixed order.
const (
	fieldV      = "v"
	fieldKID    = "kid"
	fieldTarget = "target"
	fieldFault  = "fault"
	fieldMs     = "ms"
	fieldP      = "p"
	fieldIAT    = "iat"
	fieldExp    = "exp"
	fieldJTI    = "jti"
	fieldSig    = "sig"
)

// fieldOrder lists the wire fields in the only order a value may carry
// them. ms appears only when fault is latency, iat only when v is 2.
var fieldOrder = [...]string{fieldV, fieldKID, fieldTarget, fieldFault, fieldMs, fieldP, fieldIAT, fieldExp, fieldJTI, fieldSig}

// fieldOrderText names the fields of a version's values, for messages.
func fieldOrderText(v int) string {
	if v == Version1 {
		return "v;kid;target;fault;ms;p;exp;jti;sig"
	}
	return "v;kid;target;fault;ms;p;iat;exp;jti;sig"
}

// Header is a parsed chaos header value. Parse only returns headers whose
// every field follows the grammar; whether the header is authentic and
// current is the [Verifier]'s business.
type Header struct {
	Fields
	// KID is the id of the key that signed the header.
	KID string
	// Sig is the HMAC-SHA256 signature over the signing input.
	Sig [sha256.Size]byte

	value     string // the exact bytes parsed
	signedLen int    // value[:signedLen] is the signing input
}

// Value returns the exact header value that was parsed or signed.
func (h *Header) Value() string { return h.value }

// SigningInput returns the exact bytes the signature covers: the value up
// to, not including, ";sig=".
func (h *Header) SigningInput() string { return h.value[:h.signedLen] }

// SigString returns the signature as it appears on the wire (unpadded
// base64url). A signature is not secret: it is in every request that
// carries the header.
func (h *Header) SigString() string { return string(appendB64(nil, h.Sig[:])) }

// Encode serializes h from its fields, KID and Sig. The grammar admits one
// spelling per header, so for a header returned by [Parse] or [SignHeader]
// this equals [Header.Value]; verifiers never need it (they check the exact
// bytes received).
func (h *Header) Encode() string {
	b := appendSigningInput(make([]byte, 0, 192), h.KID, &h.Fields)
	b = append(b, ";sig="...)
	return string(appendB64(b, h.Sig[:]))
}

// Line returns "X-Kosha-Chaos: <value>", the header as an HTTP request
// carries it.
func (h *Header) Line() string { return HeaderName + ": " + h.value }

// Summary describes the header's effect in one line, for example
// "latency 250ms on core-api, p=0.5".
func (h *Header) Summary() string {
	var b strings.Builder
	b.WriteString(h.Fault.String())
	if h.Fault == FaultLatency {
		fmt.Fprintf(&b, " %dms", h.Ms)
	}
	fmt.Fprintf(&b, " on %s, p=%s", h.Target, h.P)
	return b.String()
}

// MarshalJSON encodes the parsed fields (not the signature) for
// machine-readable output.
func (h Header) MarshalJSON() ([]byte, error) {
	type view struct {
		V         int       `json:"v"`
		KID       string    `json:"kid"`
		Target    Target    `json:"target"`
		Fault     Fault     `json:"fault"`
		Ms        int       `json:"ms,omitempty"`
		P         Prob      `json:"p"`
		IAT       int64     `json:"iat,omitempty"`
		Exp       int64     `json:"exp"`
		ExpiresAt time.Time `json:"expires_at"`
		JTI       string    `json:"jti"`
	}
	return json.Marshal(view{h.Version(), h.KID, h.Target, h.Fault, h.Ms, h.P, h.IAT, h.Exp, h.ExpTime().UTC(), h.JTI})
}

// appendSigningInput appends "v=2;kid=...;...;jti=..." (v=1 without an
// IAT) for f signed under kid: every field but sig, in wire order, as
// [Parse] reads them. f must be valid.
func appendSigningInput(dst []byte, kid string, f *Fields) []byte {
	for i, name := range fieldOrder[:len(fieldOrder)-1] {
		if !f.carries(name, f.Version()) {
			continue
		}
		if i > 0 {
			dst = append(dst, ';')
		}
		dst = append(append(dst, name...), '=')
		switch name {
		case fieldV:
			dst = strconv.AppendInt(dst, int64(f.Version()), 10)
		case fieldKID:
			dst = append(dst, kid...)
		case fieldTarget:
			dst = append(dst, f.Target...)
		case fieldFault:
			dst = append(dst, faultNames[f.Fault]...)
		case fieldMs:
			dst = strconv.AppendInt(dst, int64(f.Ms), 10)
		case fieldP:
			dst = f.P.appendTo(dst)
		case fieldIAT:
			dst = strconv.AppendInt(dst, f.IAT, 10)
		case fieldExp:
			dst = strconv.AppendInt(dst, f.Exp, 10)
		case fieldJTI:
			dst = append(dst, f.JTI...)
		}
	}
	return dst
}

// carries reports whether a version v header with these fields carries
// the wire field name: ms only with fault=latency, iat only in v=2.
func (f *Fields) carries(name string, v int) bool {
	switch name {
	case fieldMs:
		return f.Fault == FaultLatency
	case fieldIAT:
		return v == Version2
	}
	return true
}

// Parse parses a header value strictly by the contract grammar. It never
// allocates on success. Every field must appear exactly once, in order, with
// its one canonical spelling; anything else (duplicates, unknown fields,
// whitespace, leading zeros, exponents, trailing data) is a *FieldError
// naming the field.
//
// Parse checks syntax only. Use a [Verifier] to check key, signature,
// target and time.
func Parse(value string) (Header, error) {
	var h Header
	if value == "" {
		return Header{}, &FieldError{Problem: "empty value"}
	}
	if len(value) > MaxValueLen {
		return Header{}, &FieldError{Problem: fmt.Sprintf("value is %d bytes, longer than the %d allowed", len(value), MaxValueLen)}
	}
	p := parser{s: value, version: Version2}
	sigStart := 0
	for i, name := range fieldOrder {
		if !h.carries(name, p.version) {
			if name == fieldMs && p.peekName() == fieldMs {
				return Header{}, &FieldError{Field: fieldMs, Problem: "only allowed with fault=latency, this header has fault=" + h.Fault.String()}
			}
			continue
		}
		if name == fieldMs && !p.nextIs("ms=") {
			if next := p.peekName(); p.done || fieldIndex(next) > fieldIndex(fieldMs) {
				return Header{}, &FieldError{Field: fieldMs, Problem: fmt.Sprintf("missing; fault=latency needs ms=<%d..%d milliseconds> before p", MinMs, MaxMs)}
			}
		}
		if name == fieldSig {
			sigStart = p.pos
		}
		s, err := p.field(name, i)
		if err != nil {
			return Header{}, err
		}
		if err := h.parseField(&p, name, s); err != nil {
			return Header{}, err
		}
	}
	if !p.done {
		return Header{}, p.trailing()
	}
	h.value = value
	h.signedLen = sigStart - 1
	return h, nil
}

// parseField checks s, the value of the wire field name, and sets it on h.
func (h *Header) parseField(p *parser, name, s string) error {
	var prob string
	switch name {
	case fieldV:
		switch s {
		case "1":
			p.version = Version1
		case "2":
		default:
			return versionError(s)
		}
	case fieldKID:
		var kidBytes [8]byte
		if bad, ok := decodeB64(kidBytes[:], s); !ok {
			prob = b64Problem(s, bad, KIDLen, "an 8-byte key id")
		}
		h.KID = s
	case fieldTarget:
		prob = targetProblem(s)
		h.Target = Target(s)
	case fieldFault:
		var err error
		if h.Fault, err = ParseFault(s); err != nil {
			return err
		}
	case fieldMs:
		n, pr := parseUint(s, 5)
		if pr == "" && (n < MinMs || n > MaxMs) {
			pr = fmt.Sprintf("%d is outside %d..%d", n, MinMs, MaxMs)
		}
		prob, h.Ms = pr, int(n)
	case fieldP:
		var err error
		if h.P, err = parseProbWire(s); err != nil {
			return err
		}
	case fieldIAT, fieldExp:
		n, pr := parseUint(s, MaxExpDigits)
		switch {
		case pr != "":
		case n == 0:
			pr = "must be a unix time after 0"
		case name == fieldExp && h.IAT != 0:
			pr = lifetimeProblem(h.IAT, n)
		}
		prob = pr
		if name == fieldIAT {
			h.IAT = n
		} else {
			h.Exp = n
		}
	case fieldJTI:
		prob = jtiProblem(s)
		h.JTI = s
	case fieldSig:
		if bad, ok := decodeB64(h.Sig[:], s); !ok {
			prob = b64Problem(s, bad, b64Len(sha256.Size), "a 32-byte HMAC-SHA256")
		}
	}
	if prob != "" {
		return &FieldError{Field: name, Problem: prob}
	}
	return nil
}

// parser walks a value one ';'-separated field at a time.
type parser struct {
	s       string
	pos     int    // start of the next field
	done    bool   // the last field has been consumed
	seen    uint16 // bit i set: fieldOrder[i] parsed
	version int    // the v field's value, once read (2 until then)
}

func fieldIndex(name string) int { return slices.Index(fieldOrder[:], name) }

// next returns the next field's raw name and value without consuming it.
func (p *parser) next() (seg string, end int) {
	rest := p.s[p.pos:]
	if i := strings.IndexByte(rest, ';'); i >= 0 {
		return rest[:i], p.pos + i
	}
	return rest, len(p.s)
}

// peekName returns the name of the next field, or "" at the end.
func (p *parser) peekName() string {
	if p.done {
		return ""
	}
	seg, _ := p.next()
	name, _, _ := strings.Cut(seg, "=")
	return name
}

// field consumes the next field, which must be named want (fieldOrder[idx]),
// and returns its value after checking it is non-empty printable ASCII
// without spaces. The success path is a single scan; diagnosis of a wrong
// name happens only on failure.
func (p *parser) field(want string, idx int) (string, error) {
	if p.done {
		return "", &FieldError{Field: want, Problem: "missing; the value ends before it (fields are " + fieldOrderText(p.version) + ")"}
	}
	rest := p.s[p.pos:]
	if len(rest) <= len(want) || rest[len(want)] != '=' || rest[:len(want)] != want {
		return "", p.nameError(want)
	}
	start := p.pos + len(want) + 1
	i := start
	for ; i < len(p.s); i++ {
		c := p.s[i]
		if c == ';' {
			break
		}
		if c <= ' ' || c >= 0x7f {
			return "", &FieldError{Field: want, Problem: fmt.Sprintf("%s at offset %d of the value; whitespace and non-printable bytes are not allowed", describeByte(c), i-start)}
		}
	}
	if i == start {
		return "", &FieldError{Field: want, Problem: "empty value"}
	}
	p.seen |= 1 << idx
	if i == len(p.s) {
		p.done = true
	}
	p.pos = i + 1
	return p.s[start:i], nil
}

// nextIs reports whether the rest of the value starts with prefix.
func (p *parser) nextIs(prefix string) bool {
	return !p.done && strings.HasPrefix(p.s[p.pos:], prefix)
}

// nameError explains why the next field is not want.
func (p *parser) nameError(want string) error {
	seg, _ := p.next()
	name, _, hasEq := strings.Cut(seg, "=")
	if !hasEq && (fieldIndex(seg) >= 0 || seg == "") {
		return &FieldError{Field: want, Problem: fmt.Sprintf("expected %q, found %s without '='", want+"=", quote(seg))}
	}
	return p.wrongName(want, name)
}

// wrongName explains a field name other than the one expected.
func (p *parser) wrongName(want, name string) error {
	i := fieldIndex(name)
	switch {
	case i >= 0 && p.seen&(1<<i) != 0:
		return &FieldError{Field: name, Problem: "appears more than once"}
	case i >= 0:
		return &FieldError{Field: want, Problem: fmt.Sprintf("missing: found %q where %q belongs (fields of v=%d are %s, in that order)", name, want, p.version, fieldOrderText(p.version))}
	case strings.TrimSpace(name) != name || strings.ContainsAny(name, " \t\r\n"):
		return &FieldError{Field: want, Problem: fmt.Sprintf("whitespace in the field name %s; no spaces are allowed anywhere", quote(name))}
	case fieldIndex(strings.ToLower(name)) >= 0:
		return &FieldError{Field: want, Problem: fmt.Sprintf("field names are lowercase, found %s", quote(name))}
	case name == "":
		return &FieldError{Field: want, Problem: fmt.Sprintf("missing: found an empty field where %q belongs", want)}
	}
	return &FieldError{Field: want, Problem: fmt.Sprintf("unknown field %s where %q belongs (fields of v=%d are %s)", quote(name), want, p.version, fieldOrderText(p.version))}
}

// trailing explains data after sig.
func (p *parser) trailing() error {
	seg, _ := p.next()
	name, _, _ := strings.Cut(seg, "=")
	if i := fieldIndex(name); i >= 0 && p.seen&(1<<i) != 0 {
		return &FieldError{Field: name, Problem: "appears more than once"}
	}
	if seg == "" {
		return &FieldError{Field: fieldSig, Problem: "trailing ';' after sig; sig must end the value"}
	}
	return &FieldError{Field: fieldSig, Problem: fmt.Sprintf("unexpected data %s after sig; sig must end the value", quote(seg))}
}

func versionError(v string) error {
	n, prob := parseUint(v, 4)
	if prob != "" {
		return &FieldError{Field: fieldV, Problem: prob}
	}
	return &FieldError{Field: fieldV, Problem: fmt.Sprintf("unsupported version %d; this implementation speaks v=1 and v=2", n)}
}

// lifetimeProblem checks a v=2 header's exp against its iat: after it, and
// at most [MaxTTL] after it (no signer mints a longer ttl).
func lifetimeProblem(iat, exp int64) string {
	switch {
	case exp <= iat:
		return fmt.Sprintf("%d is not after iat %d", exp, iat)
	case exp-iat > int64(MaxTTL/time.Second):
		return fmt.Sprintf("%d is %d s after iat %d; a header lives at most %d s", exp, exp-iat, iat, int64(MaxTTL/time.Second))
	}
	return ""
}

// parseUint parses a canonical unsigned decimal of at most maxDigits digits:
// no sign, no leading zeros, no exponent.
func parseUint(s string, maxDigits int) (int64, string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			continue
		}
		switch {
		case strings.ContainsAny(s, "eE"):
			return 0, fmt.Sprintf("%s: exponent notation not allowed", quote(s))
		case c == '+' || c == '-':
			return 0, fmt.Sprintf("%s: sign not allowed", quote(s))
		case c == '.':
			return 0, fmt.Sprintf("%s: must be a whole number", quote(s))
		}
		return 0, fmt.Sprintf("%s is not a decimal integer (%s at offset %d)", quote(s), describeByte(c), i)
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Sprintf("%s: leading zeros not allowed", quote(s))
	}
	if len(s) > maxDigits {
		return 0, fmt.Sprintf("%s has more than %d digits", quote(s), maxDigits)
	}
	var n int64
	for i := 0; i < len(s); i++ {
		n = n*10 + int64(s[i]-'0')
	}
	return n, ""
}

// parseProbWire parses p in its one canonical spelling: "1", or "0."
// followed by one to four digits, the last not zero.
func parseProbWire(s string) (Prob, error) {
	// The lenient parser reads it; canonical is the one spelling String
	// gives back.
	lp, prob := parseProbLenient(s)
	var canonical [8]byte
	switch {
	case prob != "":
	case string(lp.appendTo(canonical[:0])) == s:
		return lp, nil
	case lp == ProbOne:
		prob = fmt.Sprintf("%s must be written 1", quote(s))
	default:
		prob = fmt.Sprintf("%s must be written %s (canonical form: no leading or trailing zeros)", quote(s), lp)
	}
	return 0, &FieldError{Field: fieldP, Problem: prob}
}

func b64Problem(s string, badAt, wantLen int, what string) string {
	switch {
	case badAt >= 0:
		return fmt.Sprintf("%s at offset %d is not a base64url character (A-Z a-z 0-9 - _, no padding)", describeByte(s[badAt]), badAt)
	case len(s) != wantLen:
		return fmt.Sprintf("must be %d base64url characters (%s, no padding), got %d", wantLen, what, len(s))
	}
	return fmt.Sprintf("%s is not canonical base64url: the unused low bits of its last character must be zero", quote(s))
}
