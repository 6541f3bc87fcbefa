package chaos_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
	"github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// vecNow is 2026-01-01T00:00:00Z, the vectors' reference instant.
const vecNow = 1767225600

// vecKeyBytes derives a test key: SHA-256 blocks of a label, cut to n bytes.
func vecKeyBytes(label string, n int) []byte {
	var out []byte
	for i := 0; len(out) < n; i++ {
		s := sha256.Sum256([]byte(fmt.Sprintf("kosha-chaos test vector %s %d", label, i)))
		out = append(out, s[:]...)
	}
	return out[:n]
}

// vectorBuilder builds chaos-header.json with the Go implementation.
type vectorBuilder struct {
	t    *testing.T
	raw  map[string][]byte
	keys map[string]chaos.Key
	vf   vectorFile
}

func newVectorBuilder(t *testing.T) *vectorBuilder {
	b := &vectorBuilder{t: t, raw: map[string][]byte{"k1": vecKeyBytes("k1", 32), "k2": vecKeyBytes("k2", 48), "k3": vecKeyBytes("k3", 32)},
		keys: map[string]chaos.Key{}}
	b.vf.Keys = map[string]vecKey{}
	for name, raw := range b.raw {
		k, err := chaos.NewKey(raw)
		if err != nil {
			t.Fatal(err)
		}
		b.keys[name] = k
		b.vf.Keys[name] = vecKey{KeyB64: base64.StdEncoding.EncodeToString(raw), KID: k.KID()}
	}
	return b
}

type fieldOpt func(*vecFields)

func withTarget(s string) fieldOpt { return func(f *vecFields) { f.Target = s } }
func withP(s string) fieldOpt      { return func(f *vecFields) { f.P = s } }
func withExp(e int64) fieldOpt     { return func(f *vecFields) { f.Exp = e } }
func withMs(ms int) fieldOpt       { return func(f *vecFields) { f.Ms = ms } }
func withJTI(s string) fieldOpt    { return func(f *vecFields) { f.JTI = s } }
func withIAT(i int64) fieldOpt     { return func(f *vecFields) { f.IAT = i } }
func withFault(s string) fieldOpt {
	return func(f *vecFields) {
		f.Fault = s
		if s != "latency" {
			f.Ms = 0
		}
	}
}

func vecDefaultFields(opts ...fieldOpt) vecFields {
	f := vecFields{Target: "core-api", Fault: "latency", Ms: 250, P: "0.5", Exp: vecNow + 300, JTI: "q8fZ0m3uXh7yLp2NaVbW4g"}
	for _, o := range opts {
		o(&f)
	}
	return f
}

// signed signs fields with key (by name) and returns the header.
func (b *vectorBuilder) signed(key string, opts ...fieldOpt) (vecFields, chaos.Header) {
	b.t.Helper()
	f := vecDefaultFields(opts...)
	fault, err := chaos.ParseFault(f.Fault)
	if err != nil {
		b.t.Fatal(err)
	}
	p, err := chaos.ParseProb(f.P)
	if err != nil {
		b.t.Fatal(err)
	}
	h, err := chaos.SignHeader(b.keys[key], chaos.Fields{Target: chaos.Target(f.Target), Fault: fault, Ms: f.Ms, P: p, IAT: f.IAT, Exp: f.Exp, JTI: f.JTI})
	if err != nil {
		b.t.Fatalf("sign %+v: %v", f, err)
	}
	return f, h
}

func (b *vectorBuilder) valid(name string, now float64, key string, keyring []string, opts ...fieldOpt) {
	f, h := b.signed(key, opts...)
	b.vf.Valid = append(b.vf.Valid, validVector{Name: name, Key: key, Fields: f, Now: now, Keyring: keyring,
		SigningInput: h.SigningInput(), Sig: h.SigString(), Value: h.Value()})
}

// invalid records a value that must fail; check and field are what the
// Go verifier reports (the test below confirms they are what the case
// means).
func (b *vectorBuilder) invalid(name, value, check, field string, now float64, keyring ...string) {
	b.vf.Invalid = append(b.vf.Invalid, invalidVector{Name: name, Value: value, Now: now, Keyring: keyring, Check: check, Field: field})
}

func swap(t *testing.T, value, old, repl string) string {
	t.Helper()
	if !strings.Contains(value, old) {
		t.Fatalf("%q not in %q", old, value)
	}
	return strings.Replace(value, old, repl, 1)
}

// bumpLast changes the last character to another of the same alphabet
// whose trailing bits are not zero.
func bumpLast(s string) string {
	last := s[len(s)-1]
	next := last + 1
	if last == 'A' {
		next = 'B'
	}
	return s[:len(s)-1] + string(next)
}

func (b *vectorBuilder) build() {
	t := b.t
	b.valid("latency 250ms on core-api, p=0.5, ttl 5m", vecNow, "k1", nil)
	b.valid("error on screening-sim, p=1, exp exactly at the 15m cap", vecNow, "k1", nil, withFault("error"), withTarget("screening-sim"), withP("1"), withExp(vecNow+900))
	b.valid("timeout on openai, smallest p", vecNow, "k1", nil, withFault("timeout"), withTarget("openai"), withP("0.0001"), withExp(vecNow+60))
	b.valid("reset on postgres signed by the previous (48-byte) key after rotation", vecNow, "k2", nil, withFault("reset"), withTarget("postgres"), withP("0.25"))
	b.valid("largest ms, p=0.9999, 64-character jti", vecNow, "k1", nil, withMs(60000), withP("0.9999"), withJTI(strings.Repeat("A", 32)+strings.Repeat("z_-9", 8)))
	b.valid("smallest ms, 16-character jti", vecNow, "k1", nil, withMs(1), withP("0.123"), withJTI("abcdefghijklmnop"))
	b.valid("exp at the cap plus the full 30s skew allowance", vecNow, "k1", nil, withFault("error"), withExp(vecNow+930))
	b.valid("half a second before exp", vecNow+299.5, "k1", nil, withFault("reset"))
	b.valid("verifier holding only the current and previous key", vecNow, "k2", []string{"k3", "k2"}, withFault("error"), withP("1"))
	b.valid("v=2: latency with iat, ttl 5m", vecNow, "k1", nil, withIAT(vecNow))
	b.valid("v=2: error, exp exactly 15m after iat", vecNow+60, "k1", nil, withFault("error"), withP("1"), withIAT(vecNow), withExp(vecNow+900))
	b.valid("v=2: reset, one-second ttl, signed by the previous key", vecNow, "k2", nil, withFault("reset"), withIAT(vecNow), withExp(vecNow+1))

	_, baseH := b.signed("k1")
	base, baseSI, baseSig := baseH.Value(), baseH.SigningInput(), baseH.SigString()
	_, ebaseH := b.signed("k1", withFault("error"), withP("1"))
	ebase := ebaseH.Value()
	k1kid := b.keys["k1"].KID()
	exp := strconv.Itoa(vecNow + 300)

	bad := func(name, value, check, field string) { b.invalid(name, value, check, field, vecNow) }
	// syntax: the value as a whole
	bad("empty value", "", "syntax", "")
	bad("longer than 512 bytes", base+";"+strings.Repeat("x", 600), "syntax", "")
	// v
	bad("unsupported version", swap(t, base, "v=1;", "v=3;"), "syntax", "v")
	bad("version with a leading zero", swap(t, base, "v=1;", "v=01;"), "syntax", "v")
	bad("version field missing", base[len("v=1;"):], "syntax", "v")
	bad("leading space", " "+base, "syntax", "v")
	bad("uppercase field name", "V"+base[1:], "syntax", "v")
	bad("header line instead of value", "X-Kosha-Chaos: "+base, "syntax", "v")
	// kid
	bad("space after ';'", swap(t, base, ";kid=", "; kid="), "syntax", "kid")
	bad("kid too long", swap(t, base, "kid=", "kid=A"), "syntax", "kid")
	bad("kid with non-zero trailing bits", swap(t, base, k1kid, bumpLast(k1kid)), "syntax", "kid")
	bad("duplicate kid", swap(t, base, ";target=", ";kid="+k1kid+";target="), "syntax", "kid")
	// target
	bad("uppercase target", swap(t, base, "target=core-api", "target=Core-API"), "syntax", "target")
	bad("target starting with '-'", swap(t, base, "target=core-api", "target=-core"), "syntax", "target")
	bad("tab inside target", swap(t, base, "target=core-api", "target=core\tapi"), "syntax", "target")
	bad("duplicate target", swap(t, base, ";fault=", ";target=core-api;fault="), "syntax", "target")
	// fault
	bad("unknown fault", swap(t, ebase, "fault=error", "fault=drop"), "syntax", "fault")
	bad("unknown field where fault belongs", swap(t, base, ";fault=", ";foo=bar;fault="), "syntax", "fault")
	// ms
	bad("ms missing for latency", swap(t, base, ";ms=250", ""), "syntax", "ms")
	bad("ms present for error", swap(t, ebase, ";p=", ";ms=250;p="), "syntax", "ms")
	bad("ms with a leading zero", swap(t, base, "ms=250", "ms=0250"), "syntax", "ms")
	bad("ms zero", swap(t, base, "ms=250", "ms=0"), "syntax", "ms")
	bad("ms above 60000", swap(t, base, "ms=250", "ms=60001"), "syntax", "ms")
	bad("ms with an exponent", swap(t, base, "ms=250", "ms=2.5e2"), "syntax", "ms")
	bad("ms with a sign", swap(t, base, "ms=250", "ms=+250"), "syntax", "ms")
	bad("duplicate ms", swap(t, base, ";p=", ";ms=250;p="), "syntax", "ms")
	// p
	bad("p with a trailing zero", swap(t, base, "p=0.5", "p=0.50"), "syntax", "p")
	bad("p without the leading 0", swap(t, base, "p=0.5", "p=.5"), "syntax", "p")
	bad("p=1.0", swap(t, base, "p=0.5", "p=1.0"), "syntax", "p")
	bad("p zero", swap(t, base, "p=0.5", "p=0"), "syntax", "p")
	bad("p with five decimals", swap(t, base, "p=0.5", "p=0.00001"), "syntax", "p")
	bad("p with an exponent", swap(t, base, "p=0.5", "p=5e-1"), "syntax", "p")
	bad("p above 1", swap(t, base, "p=0.5", "p=1.5"), "syntax", "p")
	bad("p and exp swapped", swap(t, base, ";p=0.5;exp="+exp, ";exp="+exp+";p=0.5"), "syntax", "p")
	bad("duplicate p", swap(t, base, ";exp=", ";p=0.5;exp="), "syntax", "p")
	// exp
	bad("exp with a leading zero", swap(t, base, "exp="+exp, "exp=0"+exp), "syntax", "exp")
	bad("exp zero", swap(t, base, "exp="+exp, "exp=0"), "syntax", "exp")
	bad("exp with an exponent", swap(t, base, "exp="+exp, "exp=1.7672259e9"), "syntax", "exp")
	bad("exp with 12 digits", swap(t, base, "exp="+exp, "exp=100000000000"), "syntax", "exp")
	bad("exp negative", swap(t, base, "exp="+exp, "exp=-1"), "syntax", "exp")
	bad("duplicate exp", swap(t, base, ";jti=", ";exp="+exp+";jti="), "syntax", "exp")
	// jti
	bad("jti of 15 characters", swap(t, base, "jti=q8fZ0m3uXh7yLp2NaVbW4g", "jti=q8fZ0m3uXh7yLp2"), "syntax", "jti")
	bad("jti with standard base64 characters", swap(t, base, "jti=q8fZ0m3uXh7yLp2NaVbW4g", "jti=q8fZ0m3uXh7yLp2NaVb+/g=="), "syntax", "jti")
	bad("jti with a non-ASCII byte", swap(t, base, "jti=q8fZ0m3uXh7yLp2NaVbW4g", "jti=q8fZ0m3uXh7yLp2NaVbW4\u00e9"), "syntax", "jti")
	bad("CR LF injected before jti", swap(t, base, ";jti=", ";\r\njti="), "syntax", "jti")
	bad("duplicate jti", swap(t, base, ";sig=", ";jti=q8fZ0m3uXh7yLp2NaVbW4g;sig="), "syntax", "jti")
	// iat (v=2)
	_, v2H := b.signed("k1", withIAT(vecNow))
	v2 := v2H.Value()
	iat := strconv.Itoa(vecNow)
	bad("v=2 without iat", swap(t, v2, ";iat="+iat, ""), "syntax", "iat")
	bad("v=1 layout under v=2", swap(t, base, "v=1;", "v=2;"), "syntax", "iat")
	bad("iat in a v=1 header", swap(t, base, ";exp=", ";iat="+iat+";exp="), "syntax", "exp")
	bad("iat with a leading zero", swap(t, v2, "iat="+iat, "iat=0"+iat), "syntax", "iat")
	bad("iat zero", swap(t, v2, "iat="+iat, "iat=0"), "syntax", "iat")
	bad("iat with 12 digits", swap(t, v2, "iat="+iat, "iat=100000000000"), "syntax", "iat")
	bad("iat after exp in order", swap(t, v2, ";iat="+iat+";exp="+exp, ";exp="+exp+";iat="+iat), "syntax", "iat")
	bad("duplicate iat", swap(t, v2, ";exp=", ";iat="+iat+";exp="), "syntax", "iat")
	bad("exp equal to iat", swap(t, v2, "iat="+iat, "iat="+exp), "syntax", "exp")
	bad("exp more than 15m after iat", swap(t, v2, "iat="+iat, "iat="+strconv.Itoa(vecNow+300-901)), "syntax", "exp")
	bad("iat tampered", swap(t, v2, "iat="+iat, "iat="+strconv.Itoa(vecNow-1)), "signature", "sig")
	bad("v=2 header carrying the signature of its v=1 twin", swap(t, v2, ";sig="+v2H.SigString(), ";sig="+baseSig), "signature", "sig")
	// sig
	bad("sig with padding", base+"=", "syntax", "sig")
	bad("sig with non-zero trailing bits", bumpLast(base), "syntax", "sig")
	bad("sig in standard base64", base[:len(base)-2]+"+/", "syntax", "sig")
	bad("sig missing", baseSI, "syntax", "sig")
	bad("trailing ';'", base+";", "syntax", "sig")
	bad("trailing field after sig", base+";x=1", "syntax", "sig")
	bad("sig twice", base+";sig="+baseSig, "syntax", "sig")
	bad("trailing space", base+" ", "syntax", "sig")
	bad("trailing newline", base+"\n", "syntax", "sig")
	// target: well formed and signed, but not allowed
	_, other := b.signed("k1", withTarget("billing"))
	bad("target not in the context's targets", other.Value(), "target", "target")
	_, otherK3 := b.signed("k3", withTarget("billing"))
	b.invalid("target checked before kid", otherK3.Value(), "target", "target", vecNow, "k1", "k2")
	// kid
	_, byK3 := b.signed("k3")
	b.invalid("kid of a key the keyring does not hold", byK3.Value(), "kid", "kid", vecNow, "k1", "k2")
	_, byK2 := b.signed("k2")
	b.invalid("key retired: signed by a key rotated out", byK2.Value(), "kid", "kid", vecNow, "k1", "k3")
	// signature
	bad("p tampered", swap(t, base, "p=0.5", "p=0.6"), "signature", "sig")
	bad("exp extended", swap(t, base, "exp="+exp, "exp="+strconv.Itoa(vecNow+301)), "signature", "sig")
	bad("kid swapped to another held key", swap(t, base, k1kid, b.keys["k2"].KID()), "signature", "sig")
	bad("all-zero signature", base[:len(base)-len(baseSig)]+strings.Repeat("A", 43), "signature", "sig")
	b.invalid("signature checked before expiry", swap(t, base, "p=0.5", "p=0.6"), "signature", "sig", vecNow+3600)
	// expiry
	b.invalid("now equals exp", base, "expiry", "exp", vecNow+300)
	b.invalid("half a second after exp", base, "expiry", "exp", vecNow+300.5)
	b.invalid("an hour after exp", base, "expiry", "exp", vecNow+3900)
	// cap
	_, over := b.signed("k1", withExp(vecNow+931))
	bad("exp one second past the cap and skew", over.Value(), "cap", "exp")
	_, at := b.signed("k1", withExp(vecNow+930))
	b.invalid("exp half a second past the cap and skew", at.Value(), "cap", "exp", vecNow-0.5)
	_, day := b.signed("k1", withExp(vecNow+86400))
	bad("exp a day ahead", day.Value(), "cap", "exp")

	std := base64.StdEncoding.EncodeToString
	k1, k2 := b.raw["k1"], b.raw["k2"]
	k21 := append(append([]byte{}, k2...), k1...)
	kidOf := func(raw []byte) string {
		k, err := chaos.NewKey(raw)
		if err != nil {
			t.Fatal(err)
		}
		return k.KID()
	}
	b.vf.KeyEncodings = []keyEncoding{
		{Name: "standard base64 with padding", Input: std(k1), KID: kidOf(k1)},
		{Name: "trailing newline", Input: std(k1) + "\n", KID: kidOf(k1)},
		{Name: "line-wrapped with CRLF", Input: std(k21)[:40] + "\r\n" + std(k21)[40:], KID: kidOf(k21)},
		{Name: "padding omitted", Input: strings.TrimRight(std(k2[:47]), "="), KID: kidOf(k2[:47])},
		{Name: "base64url alphabet", Input: base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xff", 16))), Error: true},
		{Name: "16 bytes is too short", Input: std(k1[:16]), Error: true},
		{Name: "one byte repeated", Input: std([]byte(strings.Repeat("\x07", 32))), Error: true},
		{Name: "empty", Input: "", Error: true},
	}
	b.fuzzCorpus()
}

// corpusArgs reads a `go test fuzz v1` file into its values' literal text
// (strings unquoted).
func corpusArgs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a fuzz corpus file", path)
	}
	var out []string
	for _, l := range lines[1:] {
		open := strings.IndexByte(l, '(')
		lit := l[open+1 : len(l)-1]
		if strings.HasPrefix(lit, `"`) {
			s, err := strconv.Unquote(lit)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			lit = s
		}
		out = append(out, lit)
	}
	return out
}

func corpusFiles(t *testing.T, target string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no %s corpus (%v)", target, err)
	}
	sort.Strings(paths)
	return paths
}

// fuzzCorpus turns every input the fuzzers keep into a vector, with the
// Go implementation's answer.
func (b *vectorBuilder) fuzzCorpus() {
	t := b.t
	ver := b.verifier([]string{"k1", "k2"}, chaos.Options{})
	for _, p := range corpusFiles(t, "FuzzVerify") {
		args := corpusArgs(t, p)
		fv := fuzzVerify{Name: filepath.Base(p), Value: args[0], Now: vecNow, Keyring: []string{"k1", "k2"}}
		_, err := ver.VerifyAt(context.Background(), fv.Value, time.Unix(vecNow, 0))
		var ce *chaos.CheckError
		switch {
		case err == nil:
			fv.OK = true
		case errors.As(err, &ce):
			fv.Check, fv.Field = string(ce.Check), ce.Field
		default:
			t.Fatalf("%s: %v", p, err)
		}
		b.vf.FuzzVerify = append(b.vf.FuzzVerify, fv)
	}
	for _, p := range corpusFiles(t, "FuzzSignRoundTrip") {
		a := corpusArgs(t, p)
		num := func(s string) int64 {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			return n
		}
		fs := fuzzSign{Name: filepath.Base(p), Target: a[0], Fault: int(num(a[1])), Ms: int(num(a[2])), PUnits: int(num(a[3])),
			Exp: num(a[4]), JTI: a[5], KeyB64: base64.StdEncoding.EncodeToString([]byte(a[6]))}
		key, err := chaos.NewKey([]byte(a[6]))
		if err != nil {
			fs.KeyError = true
			b.vf.FuzzSign = append(b.vf.FuzzSign, fs)
			continue
		}
		fault, p := chaos.Fault(num(a[1])), chaos.Prob(num(a[3])) //nolint:gosec // G115: the corpus holds a uint8 and a uint16 here
		value, err := chaostest.Sign(key, chaos.Fields{Target: chaos.Target(fs.Target), Fault: fault, Ms: fs.Ms, P: p, Exp: fs.Exp, JTI: fs.JTI})
		if err != nil {
			fs.Error = true
		} else {
			fs.Value = value
		}
		b.vf.FuzzSign = append(b.vf.FuzzSign, fs)
	}
}

func (b *vectorBuilder) verifier(names []string, opts chaos.Options) *chaos.Verifier {
	b.t.Helper()
	var ks []chaos.Key
	for _, n := range names {
		ks = append(ks, b.keys[n])
	}
	set, err := chaostest.NewKeySet(ks[0], ks[1:]...)
	if err != nil {
		b.t.Fatal(err)
	}
	v, err := chaos.NewVerifier(set, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// TestContractVectors generates docs/contracts/vectors/chaos-header.json
// with this package (signing, verification, key decoding) and fails when
// the checked-in file differs (make vectors rewrites it). Each invalid case
// states the check and field it is written for; the test fails if the Go
// verifier reports another, so a changed rule shows here first.
func TestContractVectors(t *testing.T) {
	b := newVectorBuilder(t)
	b.vf.Description = "Test vectors for the X-Kosha-Chaos header (docs/contracts/chaos-header.md). keys: raw keys as standard base64 " +
		"with their kids. valid: sign 'fields' with 'key' and expect exactly 'signing_input', 'sig' and 'value'; verifying 'value' " +
		"at 'now' (unix seconds, may be fractional) against 'keyring' (default: every key) must pass. invalid: verifying 'value' " +
		"at 'now' against 'keyring' must fail, and the first failing check must be 'check'; for syntax failures 'field' names the " +
		"field at fault ('' for the value as a whole). key_encodings: decoding 'input' must yield a key with 'kid', or fail when " +
		"'error'. fuzz_verify: every input the Go fuzzers keep (internal/chaos/testdata/fuzz), verified at 'now' with 'keyring' " +
		"and the default targets: ok, or the first failing check and field. fuzz_sign: raw fields and key of the sign fuzzer's " +
		"corpus: key_error when the key is unusable, error when the fields are refused, otherwise the exact 'value'. " +
		"Generated from the Go code by make vectors."
	b.vf.Contract = "docs/contracts/chaos-header.md"
	b.vf.Header = chaos.HeaderName
	for _, tg := range chaos.DefaultTargets() {
		b.vf.Targets = append(b.vf.Targets, string(tg))
	}
	b.vf.MaxAheadSeconds = int(chaos.MaxTTL.Seconds())
	b.vf.SkewSeconds = int(chaos.DefaultSkew.Seconds())
	b.build()
	// Each invalid case fails where it was written to fail.
	for _, iv := range b.vf.Invalid {
		names := iv.Keyring
		if names == nil {
			names = []string{"k1", "k2", "k3"}
		}
		_, err := b.verifier(names, chaos.Options{}).VerifyAt(context.Background(), iv.Value, unixFloat(iv.Now))
		var ce *chaos.CheckError
		if !errors.As(err, &ce) || string(ce.Check) != iv.Check || ce.Field != iv.Field {
			t.Errorf("%s: Go reports %v, the case is written for %s/%s", iv.Name, err, iv.Check, iv.Field)
		}
	}
	vectors.Check(t, "chaos-header.json", b.vf)
}
