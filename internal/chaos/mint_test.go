package chaos_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

func mustMinter(t testing.TB, kr chaos.Keyring, opts chaos.MinterOptions) *chaos.Minter {
	t.Helper()
	m, err := chaos.NewMinter(kr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMintDefaultsAndVerifies(t *testing.T) {
	key := testKey(t, 1)
	clk := clocktest.NewFake(t0)
	m := mustMinter(t, mustKeySet(t, key), chaos.MinterOptions{Clock: clk})
	got, err := m.Mint(context.Background(), chaos.MintRequest{Target: chaos.TargetScreeningSim, Fault: chaos.FaultError})
	if err != nil {
		t.Fatal(err)
	}
	h := got.Header
	if h.P != chaos.ProbOne || got.TTL != 5*time.Minute || h.Exp != t0.Add(5*time.Minute).Unix() || h.KID != key.KID() {
		t.Errorf("defaults: p %s ttl %s exp %d kid %s", h.P, got.TTL, h.Exp, h.KID)
	}
	if !strings.Contains(got.Value(), ";p=1;") || strings.Contains(got.Value(), "ms=") {
		t.Errorf("value %s", got.Value())
	}
	if len(h.JTI) != 22 {
		t.Errorf("jti %q, want 22 base64url characters", h.JTI)
	}
	v := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clk})
	if _, err := v.Verify(context.Background(), got.Value()); err != nil {
		t.Fatalf("minted header does not verify: %v", err)
	}
	clk.Advance(5 * time.Minute)
	if _, err := v.Verify(context.Background(), got.Value()); !errors.Is(err, chaos.ErrExpired) {
		t.Errorf("after its ttl: %v", err)
	}
}

func TestMintTTLCapIsHard(t *testing.T) {
	key := testKey(t, 1)
	// A fractional now: exp is whole seconds, and must never land beyond
	// now+ttl, or a full-length header would trip the cap.
	now := t0.Add(999 * time.Millisecond)
	clk := clocktest.NewFake(now)
	m := mustMinter(t, mustKeySet(t, key), chaos.MinterOptions{Clock: clk})
	ctx := context.Background()
	for _, ttl := range []time.Duration{15*time.Minute + time.Second, 16 * time.Minute, time.Hour, 500 * time.Millisecond, -time.Minute} {
		_, err := m.Mint(ctx, chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultReset, TTL: ttl})
		if !errors.Is(err, chaos.ErrTTL) {
			t.Errorf("ttl %s: %v, want ErrTTL (refused, not clamped)", ttl, err)
		}
	}
	got, err := m.Mint(ctx, chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultReset, TTL: 15 * time.Minute})
	if err != nil {
		t.Fatalf("ttl 15m: %v", err)
	}
	if exp := got.Header.ExpTime(); exp.After(now.Add(15 * time.Minute)) {
		t.Errorf("exp %s is beyond now+ttl %s", exp, now.Add(15*time.Minute))
	}
	// Even a verifier with no skew allowance accepts a full-length header.
	v := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clk, Skew: -1})
	if _, err := v.Verify(ctx, got.Value()); err != nil {
		t.Errorf("15m header against a zero-skew verifier: %v", err)
	}
}

func TestMintRefusesBadRequestsBeforeTouchingKeys(t *testing.T) {
	denied := errors.New("keyring must not be read")
	m := mustMinter(t, failingKeyring{denied}, chaos.MinterOptions{Clock: clocktest.NewFake(t0)})
	cases := map[string]struct {
		req  chaos.MintRequest
		want string
	}{
		"target not allowed":   {chaos.MintRequest{Target: "billing", Fault: chaos.FaultError}, "not one of this context's chaos targets"},
		"target malformed":     {chaos.MintRequest{Target: "Core API", Fault: chaos.FaultError}, "field target"},
		"latency without ms":   {chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultLatency}, "field ms"},
		"ms above 60000":       {chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultLatency, Ms: 60001}, "field ms"},
		"ms on an error fault": {chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError, Ms: 5}, "only applies to fault=latency"},
		"no fault":             {chaos.MintRequest{Target: chaos.TargetCoreAPI}, "field fault"},
		"p above 1":            {chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError, P: chaos.ProbOne + 1}, "field p"},
	}
	for name, tc := range cases {
		_, err := m.Mint(context.Background(), tc.req)
		if err == nil || errors.Is(err, denied) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	_, err := m.Mint(context.Background(), chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError})
	if !errors.Is(err, denied) {
		t.Errorf("valid request with a failing keyring: %v", err)
	}
}

func TestMintContextTargets(t *testing.T) {
	m := mustMinter(t, mustKeySet(t, testKey(t, 1)), chaos.MinterOptions{Targets: []chaos.Target{"payments"}})
	if _, err := m.Mint(context.Background(), chaos.MintRequest{Target: "payments", Fault: chaos.FaultTimeout}); err != nil {
		t.Errorf("payments: %v", err)
	}
	if _, err := m.Mint(context.Background(), chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultTimeout}); !errors.Is(err, chaos.ErrTargetNotAllowed) {
		t.Errorf("core-api in a payments-only context: %v", err)
	}
}

func TestMintJTIIsRandom(t *testing.T) {
	m := mustMinter(t, mustKeySet(t, testKey(t, 1)), chaos.MinterOptions{})
	seen := map[string]bool{}
	for range 200 {
		got, err := m.Mint(context.Background(), chaos.MintRequest{Target: chaos.TargetOpenAI, Fault: chaos.FaultReset})
		if err != nil {
			t.Fatal(err)
		}
		if seen[got.Header.JTI] {
			t.Fatalf("jti %s repeated", got.Header.JTI)
		}
		seen[got.Header.JTI] = true
	}
	// The jti is the random source's bytes, base64url.
	fixed := bytes.Repeat([]byte{0xfb}, 16)
	m = mustMinter(t, mustKeySet(t, testKey(t, 1)), chaos.MinterOptions{Rand: bytes.NewReader(fixed)})
	got, err := m.Mint(context.Background(), chaos.MintRequest{Target: chaos.TargetOpenAI, Fault: chaos.FaultReset})
	if err != nil {
		t.Fatal(err)
	}
	if want := base64.RawURLEncoding.EncodeToString(fixed); got.Header.JTI != want {
		t.Errorf("jti %s, want %s", got.Header.JTI, want)
	}
	if _, err := m.Mint(context.Background(), chaos.MintRequest{Target: chaos.TargetOpenAI, Fault: chaos.FaultReset}); err == nil {
		t.Error("minted with an exhausted random source")
	}
}

func TestMintedOutputs(t *testing.T) {
	key := testKey(t, 1)
	m := mustMinter(t, mustKeySet(t, key), chaos.MinterOptions{Clock: clocktest.NewFake(t0)})
	got, err := m.Mint(context.Background(), chaos.MintRequest{Target: chaos.TargetPostgres, Fault: chaos.FaultLatency, Ms: 750, P: chaos.Prob(2500), TTL: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	value := got.Value()
	if got.Line() != "X-Kosha-Chaos: "+value {
		t.Errorf("line %q", got.Line())
	}
	if got.CurlArgs() != "-H 'X-Kosha-Chaos: "+value+"'" {
		t.Errorf("curl %q", got.CurlArgs())
	}
	// Every output format pastes back into chaos verify.
	for _, out := range []string{value, got.Line(), got.CurlArgs() + "\n", got.Line() + "\r\n"} {
		if back := chaos.ValueFromInput(out); back != value {
			t.Errorf("ValueFromInput(%q) = %q", out, back)
		}
	}
	if got.Header.Summary() != "latency 750ms on postgres, p=0.25" {
		t.Errorf("summary %q", got.Header.Summary())
	}

	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Header, Value, TTL string
		ExpiresAt          time.Time `json:"expires_at"`
		Fields             struct {
			KID, Target, Fault, JTI string
			Ms                      int
			P                       json.Number
			Exp                     int64
		}
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j.Header != "X-Kosha-Chaos" || j.Value != value || j.TTL != "1m30s" || j.Fields.Ms != 750 || j.Fields.P != "0.25" ||
		j.Fields.Target != "postgres" || j.Fields.Fault != "latency" || !j.ExpiresAt.Equal(t0.Add(90*time.Second)) {
		t.Errorf("json %s", b)
	}

	rec, err := json.Marshal(got.Record())
	if err != nil {
		t.Fatal(err)
	}
	// A "sig" key, not the letters: the random jti may contain them.
	sig := got.Header.SigString()
	if strings.Contains(string(rec), sig) || strings.Contains(string(rec), `"sig"`) || leaks(string(rec), testKeyRaw(1)) {
		t.Errorf("audit record carries the signature or key: %s", rec)
	}
	for _, want := range []string{`"jti":"` + got.Header.JTI + `"`, `"exp":` + "1772366490", `"kid":"` + key.KID() + `"`, `"ms":750`, `"p":0.25`, `"target":"postgres"`} {
		if !strings.Contains(string(rec), want) {
			t.Errorf("audit record %s lacks %s", rec, want)
		}
	}
}

// TestSignParseRoundTripProperty signs many random valid field sets and
// checks Parse gives back the same fields and bytes.
func TestSignParseRoundTripProperty(t *testing.T) {
	key := testKey(t, 3)
	rng := newRand(t)
	for i := 0; i < 5000; i++ {
		f := randomFields(rng)
		h, err := chaos.SignHeader(key, f)
		if err != nil {
			t.Fatalf("fields %+v: %v", f, err)
		}
		back, err := chaos.Parse(h.Value())
		if err != nil {
			t.Fatalf("Parse(%q): %v", h.Value(), err)
		}
		if back.Fields != f || back.KID != key.KID() || back.Sig != h.Sig || back.SigningInput() != h.SigningInput() {
			t.Fatalf("round trip changed %+v into %+v", f, back.Fields)
		}
		if back.Encode() != h.Value() {
			t.Fatalf("Encode %q != value %q", back.Encode(), h.Value())
		}
		if !strings.HasPrefix(h.Value(), h.SigningInput()+";sig=") {
			t.Fatalf("signing input is not the prefix of the value")
		}
	}
}
