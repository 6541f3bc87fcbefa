package chaos_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
)

// newRand returns a seeded generator and logs the seed if the test fails,
// so a failure can be replayed.
func newRand(t *testing.T) *mrand.Rand {
	var seed [16]byte
	_, _ = rand.Read(seed[:])
	s1, s2 := binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random seed: %d, %d", s1, s2)
		}
	})
	return mrand.New(mrand.NewPCG(s1, s2))
}

const b64urlChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func randomFields(r *mrand.Rand) chaos.Fields {
	targets := []chaos.Target{"core-api", "screening-sim", "openai", "postgres", "a", "x-9", chaos.Target(strings.Repeat("z", 63))}
	f := chaos.Fields{
		Target: targets[r.IntN(len(targets))],
		Fault:  chaos.Faults()[r.IntN(4)],
		P:      chaos.Prob(1 + r.IntN(int(chaos.ProbOne))), //nolint:gosec // G115: 1..ProbOne (10000) fits
		Exp:    1 + r.Int64N(99999999999),
	}
	if f.Fault == chaos.FaultLatency {
		f.Ms = 1 + r.IntN(chaos.MaxMs)
	}
	jti := make([]byte, chaos.MinJTILen+r.IntN(chaos.MaxJTILen-chaos.MinJTILen+1))
	for i := range jti {
		jti[i] = b64urlChars[r.IntN(64)]
	}
	f.JTI = string(jti)
	return f
}

// refGrammar is the contract's grammar as one regular expression, written
// from docs/contracts/chaos-header.md independently of the parser. Range
// checks a regexp cannot express (ms <= 60000, ms iff latency) are applied
// after matching.
var refGrammar = regexp.MustCompile(`^v=([12]);kid=([A-Za-z0-9_-]{10}[AEIMQUYcgkosw048]);target=([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?);` +
	`fault=(latency|error|timeout|reset);(?:ms=([1-9][0-9]{0,4});)?p=(1|0\.[0-9]{0,3}[1-9]);(?:iat=([1-9][0-9]{0,10});)?exp=([1-9][0-9]{0,10});` +
	`jti=([A-Za-z0-9_-]{16,64});sig=([A-Za-z0-9_-]{42}[AEIMQUYcgkosw048])$`)

// refAccepts reports whether the reference grammar accepts value: iat
// present exactly in v=2, and then exp after it by at most 900 s.
func refAccepts(value string) bool {
	m := refGrammar.FindStringSubmatch(value)
	if m == nil {
		return false
	}
	version, fault, ms, iat, exp := m[1], m[4], m[5], m[7], m[8]
	if (fault == "latency") != (ms != "") || (version == "2") != (iat != "") {
		return false
	}
	if iat != "" {
		i, _ := strconv.ParseInt(iat, 10, 64)
		e, _ := strconv.ParseInt(exp, 10, 64)
		if e <= i || e-i > 900 {
			return false
		}
	}
	if ms != "" {
		if n, _ := strconv.Atoi(ms); n > chaos.MaxMs {
			return false
		}
	}
	return true
}

func addSeeds(f *testing.F) {
	vf := loadVectors(f)
	for _, v := range vf.Valid {
		f.Add(v.Value)
	}
	for _, v := range vf.Invalid {
		f.Add(v.Value)
	}
}

// FuzzParse: Parse never panics, agrees with the reference grammar, and
// anything it accepts re-serializes to exactly the same bytes.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, value string) {
		h, err := chaos.Parse(value)
		ref := refAccepts(value) && len(value) <= chaos.MaxValueLen
		if (err == nil) != ref {
			t.Fatalf("Parse(%q) = %v, reference grammar accepts: %v", value, err, ref)
		}
		if err != nil {
			var fe *chaos.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, chaos.ErrSyntax) || fe.Problem == "" {
				t.Fatalf("Parse(%q) error %v is not a descriptive *FieldError", value, err)
			}
			if fe.Field != "" && !isWireField(fe.Field) {
				t.Fatalf("Parse(%q) blames %q, which is not a field", value, fe.Field)
			}
			return
		}
		if h.Value() != value || h.Encode() != value {
			t.Fatalf("Parse(%q) re-serializes as %q", value, h.Encode())
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted fields that do not validate: %v", value, err)
		}
		if !strings.HasPrefix(value, h.SigningInput()+";sig=") || len(value)-len(h.SigningInput()) != len(";sig=")+43 {
			t.Fatalf("signing input %q is not value minus ;sig=...", h.SigningInput())
		}
	})
}

// isWireField reports whether s is one of the contract's wire field names,
// which a *FieldError's Field is (or "").
func isWireField(s string) bool {
	return slices.Contains([]string{"v", "kid", "target", "fault", "ms", "p", "iat", "exp", "jti", "sig"}, s)
}

// FuzzVerify: Verify and Explain never panic and agree, and Verify only
// passes a header whose signature really is ours.
func FuzzVerify(f *testing.F) {
	addSeeds(f)
	vf := loadVectors(f)
	var keys []chaos.Key
	for _, name := range []string{"k1", "k2"} {
		k, err := chaos.DecodeKey(vf.Keys[name].KeyB64)
		if err != nil {
			f.Fatal(err)
		}
		keys = append(keys, k)
	}
	ks := mustKeySet(f, keys[0], keys[1])
	v := mustVerifier(f, ks, chaos.Options{})
	now := time.Unix(1767225600, 0)
	f.Fuzz(func(t *testing.T, value string) {
		ctx := context.Background()
		h, err := v.VerifyAt(ctx, value, now)
		r := v.ExplainAt(ctx, value, now)
		var ce *chaos.CheckError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("Verify(%q) = %v, not a *CheckError", value, err)
		}
		if r.OK != (err == nil) {
			t.Fatalf("Verify(%q) = %v but Explain OK = %v", value, err, r.OK)
		}
		if err != nil {
			var rce *chaos.CheckError
			if !errors.As(r.Err(), &rce) || rce.Check != ce.Check || rce.Field != ce.Field {
				t.Fatalf("Verify fails %s/%s, Explain first fails %v", ce.Check, ce.Field, r.Err())
			}
			return
		}
		// Accepted: re-signing the parsed fields must give the same bytes.
		key, _ := ks.ByKID(ctx, h.KID)
		again, serr := chaostest.Sign(key, h.Fields)
		if serr != nil || again != value {
			t.Fatalf("accepted %q, but signing its fields gives %q (%v)", value, again, serr)
		}
	})
}

// FuzzSignRoundTrip: for any field values Sign accepts, the header parses
// back to the same fields and verifies; Sign rejects exactly what Validate
// rejects.
func FuzzSignRoundTrip(f *testing.F) {
	f.Add("core-api", uint8(1), 250, uint16(5000), int64(1767225900), "q8fZ0m3uXh7yLp2NaVbW4g", []byte("0123456789abcdef0123456789abcdef"))
	f.Add("postgres", uint8(4), 0, uint16(10000), int64(99999999999), strings.Repeat("_", 64), []byte("another key, 32 bytes or more!!!"))
	f.Add("Bad Target", uint8(9), -1, uint16(0), int64(-5), "short", []byte("short key"))
	f.Fuzz(func(t *testing.T, target string, fault uint8, ms int, p uint16, exp int64, jti string, raw []byte) {
		key, err := chaos.NewKey(raw)
		if err != nil {
			return
		}
		fields := chaos.Fields{Target: chaos.Target(target), Fault: chaos.Fault(fault), Ms: ms, P: chaos.Prob(p), Exp: exp, JTI: jti}
		value, err := chaostest.Sign(key, fields)
		if verr := fields.Validate(); (err == nil) != (verr == nil) {
			t.Fatalf("Sign error %v but Validate error %v", err, verr)
		}
		if err != nil {
			return
		}
		h, err := chaos.Parse(value)
		if err != nil {
			t.Fatalf("Sign produced %q, which does not parse: %v", value, err)
		}
		if h.Fields != fields || h.KID != key.KID() || !refAccepts(value) {
			t.Fatalf("round trip of %+v gave %+v", fields, h.Fields)
		}
		// The same fields issued a whole ttl before exp: a v=2 header that
		// round-trips too (the corpus keeps v=1's arguments).
		if ttl := 1 + int64(uint64(exp)%900); exp-ttl > 0 { //nolint:gosec // G115: any exp picks some ttl
			f2 := fields
			f2.IAT = exp - ttl
			v2, err := chaostest.Sign(key, f2)
			if err != nil {
				t.Fatalf("v=2 sign of %+v: %v", f2, err)
			}
			if h2, err := chaos.Parse(v2); err != nil || h2.Fields != f2 || !refAccepts(v2) || h2.Issued() != f2.IAT {
				t.Fatalf("v=2 round trip of %+v gave %+v (%v)", f2, h2.Fields, err)
			}
		}
		ks := mustKeySet(t, key)
		v := mustVerifier(t, ks, chaos.Options{Targets: []chaos.Target{fields.Target}})
		now := h.ExpTime().Add(-time.Minute)
		if _, err := v.VerifyAt(context.Background(), value, now); err != nil {
			t.Fatalf("signed header does not verify a minute before exp: %v", err)
		}
		// Flipping any one signed byte breaks the signature or the syntax.
		i := int(uint(exp) % uint(len(h.SigningInput()))) //nolint:gosec // G115: any exp picks some byte; wrapping is fine
		tampered := []byte(value)
		tampered[i] ^= 0x01
		if _, err := v.VerifyAt(context.Background(), string(tampered), now); err == nil {
			t.Fatalf("tampered byte %d of %q still verifies", i, value)
		}
	})
}

// TestReferenceGrammarAgreesOnVectors keeps the fuzz oracle honest: it
// must accept every valid vector and reject every syntax-invalid one.
func TestReferenceGrammarAgreesOnVectors(t *testing.T) {
	vf := loadVectors(t)
	for _, v := range vf.Valid {
		if !refAccepts(v.Value) {
			t.Errorf("oracle rejects valid %q", v.Name)
		}
	}
	for _, v := range vf.Invalid {
		accepts := refAccepts(v.Value) && len(v.Value) <= chaos.MaxValueLen
		if accepts != (v.Check != "syntax") {
			t.Errorf("oracle on %q: accepts %v, but the vector fails the %s check", v.Name, accepts, v.Check)
		}
	}
}
