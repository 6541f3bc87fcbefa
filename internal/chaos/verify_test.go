package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustKeySet(t testing.TB, current chaos.Key, previous ...chaos.Key) *chaostest.KeySet {
	t.Helper()
	ks, err := chaostest.NewKeySet(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func mustVerifier(t testing.TB, kr chaos.Keyring, opts chaos.Options) *chaos.Verifier {
	t.Helper()
	v, err := chaos.NewVerifier(kr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func signAt(t testing.TB, key chaos.Key, f chaos.Fields) string {
	t.Helper()
	v, err := chaostest.Sign(key, f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func fieldsExp(exp time.Time) chaos.Fields {
	return chaos.Fields{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError, P: chaos.ProbOne, Exp: exp.Unix(), JTI: "jti-for-the-test-0001"}
}

func checkOf(err error) chaos.Check {
	var ce *chaos.CheckError
	if errors.As(err, &ce) {
		return ce.Check
	}
	return ""
}

func TestVerifyCapAndSkew(t *testing.T) {
	key := testKey(t, 1)
	ks := mustKeySet(t, key)
	cases := []struct {
		name  string
		opts  chaos.Options
		ahead time.Duration // exp - now
		want  chaos.Check   // "" = passes
	}{
		{"default cap, exactly 15m", chaos.Options{}, 15 * time.Minute, ""},
		{"default cap, 15m30s is within the 30s skew", chaos.Options{}, 15*time.Minute + 30*time.Second, ""},
		{"default cap, 15m31s", chaos.Options{}, 15*time.Minute + 31*time.Second, chaos.CheckCap},
		{"no skew allowance, 15m", chaos.Options{Skew: -1}, 15 * time.Minute, ""},
		{"no skew allowance, 15m1s", chaos.Options{Skew: -1}, 15*time.Minute + time.Second, chaos.CheckCap},
		{"2m skew allows 17m", chaos.Options{Skew: 2 * time.Minute}, 17 * time.Minute, ""},
		{"tightened cap 5m, 5m30s", chaos.Options{MaxAhead: 5 * time.Minute}, 5*time.Minute + 30*time.Second, ""},
		{"tightened cap 5m, 6m", chaos.Options{MaxAhead: 5 * time.Minute}, 6 * time.Minute, chaos.CheckCap},
		{"one second left", chaos.Options{}, time.Second, ""},
		{"expired now", chaos.Options{}, 0, chaos.CheckExpiry},
		{"expired a minute ago", chaos.Options{}, -time.Minute, chaos.CheckExpiry},
		{"no skew on expiry", chaos.Options{Skew: 2 * time.Minute}, -time.Second, chaos.CheckExpiry},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.NewFake(t0)
			tc.opts.Clock = clk
			v := mustVerifier(t, ks, tc.opts)
			value := signAt(t, key, fieldsExp(t0.Add(tc.ahead)))
			_, err := v.Verify(context.Background(), value)
			if got := checkOf(err); got != tc.want {
				t.Fatalf("failed check %q (%v), want %q", got, err, tc.want)
			}
			wantSentinel := map[chaos.Check]error{chaos.CheckCap: chaos.ErrTooFarAhead, chaos.CheckExpiry: chaos.ErrExpired}[tc.want]
			if wantSentinel != nil && !errors.Is(err, wantSentinel) {
				t.Errorf("%v does not match %v", err, wantSentinel)
			}
		})
	}
}

func TestVerifyFollowsTheClock(t *testing.T) {
	key := testKey(t, 1)
	clk := clocktest.NewFake(t0)
	v := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clk})
	value := signAt(t, key, fieldsExp(t0.Add(5*time.Minute)))
	if _, err := v.Verify(context.Background(), value); err != nil {
		t.Fatalf("fresh header: %v", err)
	}
	clk.Advance(5*time.Minute - time.Nanosecond)
	if _, err := v.Verify(context.Background(), value); err != nil {
		t.Fatalf("a nanosecond before exp: %v", err)
	}
	clk.Advance(time.Nanosecond)
	if _, err := v.Verify(context.Background(), value); !errors.Is(err, chaos.ErrExpired) {
		t.Fatalf("at exp: %v, want expired", err)
	}
	// A verifier whose clock is far behind the minter sees the header as
	// too far ahead.
	clk.Set(t0.Add(-time.Hour))
	if _, err := v.Verify(context.Background(), value); !errors.Is(err, chaos.ErrTooFarAhead) {
		t.Fatalf("clock an hour behind: %v, want the cap to fail", err)
	}
}

func TestVerifyRotation(t *testing.T) {
	old, cur, retired := testKey(t, 1), testKey(t, 2), testKey(t, 3)
	byOld := signAt(t, old, fieldsExp(t0.Add(time.Minute)))
	byCur := signAt(t, cur, fieldsExp(t0.Add(time.Minute)))
	byRetired := signAt(t, retired, fieldsExp(t0.Add(time.Minute)))

	// After rotating old -> cur, both verify: headers in flight survive.
	v := mustVerifier(t, mustKeySet(t, cur, old), chaos.Options{Clock: clocktest.NewFake(t0)})
	for name, value := range map[string]string{"previous key": byOld, "current key": byCur} {
		h, err := v.Verify(context.Background(), value)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if h.Value() != value {
			t.Errorf("%s: returned header value differs", name)
		}
	}
	_, err := v.Verify(context.Background(), byRetired)
	if !errors.Is(err, chaos.ErrUnknownKID) || checkOf(err) != chaos.CheckKID {
		t.Fatalf("retired key: %v, want the kid check to fail", err)
	}
	for _, kid := range []string{retired.KID(), cur.KID(), old.KID()} {
		if !strings.Contains(err.Error(), kid) {
			t.Errorf("kid error %q does not name %s", err, kid)
		}
	}
}

func TestVerifyTargets(t *testing.T) {
	key := testKey(t, 1)
	f := fieldsExp(t0.Add(time.Minute))
	f.Target = "payments"
	value := signAt(t, key, f)
	clk := clocktest.NewFake(t0)

	def := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clk})
	_, err := def.Verify(context.Background(), value)
	if !errors.Is(err, chaos.ErrTargetNotAllowed) || !strings.Contains(err.Error(), "core-api, screening-sim, openai, postgres") {
		t.Errorf("default targets: %v", err)
	}
	custom := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clk, Targets: []chaos.Target{"payments", "core-api"}})
	if _, err := custom.Verify(context.Background(), value); err != nil {
		t.Errorf("context allowing payments: %v", err)
	}
	onlyPay := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clk, Targets: []chaos.Target{"payments"}})
	if _, err := onlyPay.Verify(context.Background(), signAt(t, key, fieldsExp(t0.Add(time.Minute)))); !errors.Is(err, chaos.ErrTargetNotAllowed) {
		t.Errorf("core-api against a payments-only context: %v", err)
	}
}

func TestNewVerifierRefusesLooserPolicy(t *testing.T) {
	ks := mustKeySet(t, testKey(t, 1))
	for name, opts := range map[string]chaos.Options{
		"cap above 15m":    {MaxAhead: 16 * time.Minute},
		"negative cap":     {MaxAhead: -time.Minute},
		"skew above max":   {Skew: 3 * time.Minute},
		"empty targets":    {Targets: []chaos.Target{}},
		"malformed target": {Targets: []chaos.Target{"Core API"}},
	} {
		if _, err := chaos.NewVerifier(ks, opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := chaos.NewVerifier(nil, chaos.Options{}); err == nil {
		t.Error("nil keyring accepted")
	}
	v := mustVerifier(t, ks, chaos.Options{})
	if v.MaxAhead() != chaos.MaxTTL || v.Skew() != chaos.DefaultSkew || len(v.Targets()) != 4 {
		t.Errorf("defaults: cap %s skew %s targets %v", v.MaxAhead(), v.Skew(), v.Targets())
	}
}

// freezeStub is a freeze rule for the chaos package's own tests: it
// refuses everything while frozen, and headers issued before notBefore.
type freezeStub struct {
	frozen    bool
	notBefore int64
}

func (f freezeStub) AdmitChaos(issued int64, _ time.Time) error {
	ref := chaos.FreezeRef{Actor: "alice", Ref: "INC-7", WriteID: "w1"}
	switch {
	case f.frozen:
		return &chaos.FreezeRefusal{Frozen: true, Reason: "the fleet is frozen by alice (INC-7)", Freeze: ref}
	case issued < f.notBefore:
		return &chaos.FreezeRefusal{Reason: "issued before the freeze by alice (INC-7) ended", Freeze: ref}
	}
	return nil
}

func TestExplainRunsEveryCheck(t *testing.T) {
	key := testKey(t, 1)
	v := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clocktest.NewFake(t0), Freeze: freezeStub{}})
	ctx := context.Background()

	t.Run("all pass", func(t *testing.T) {
		r := v.Explain(ctx, signAt(t, key, fieldsExp(t0.Add(4*time.Minute))))
		if !r.OK || r.Err() != nil || r.Header == nil {
			t.Fatalf("report %+v", r)
		}
		if len(r.Checks) != len(chaos.Checks()) {
			t.Fatalf("%d checks reported", len(r.Checks))
		}
		for i, c := range chaos.Checks() {
			if r.Checks[i].Check != c || r.Checks[i].Outcome != chaos.OutcomePass || r.Checks[i].Reason == "" {
				t.Errorf("check %d: %+v, want %s passing with a reason", i, r.Checks[i], c)
			}
		}
		if s := chaostest.Result(r, chaos.CheckExpiry).Reason; !strings.Contains(s, "in 4m") {
			t.Errorf("expiry reason %q", s)
		}
		if s := chaostest.Result(r, chaos.CheckCap).Reason; !strings.Contains(s, "15m cap plus 30s") {
			t.Errorf("cap reason %q", s)
		}
	})

	t.Run("tampered and expired: every failure shown", func(t *testing.T) {
		value := signAt(t, key, fieldsExp(t0.Add(-time.Minute)))
		value = strings.Replace(value, "fault=error", "fault=reset", 1)
		r := v.Explain(ctx, value)
		if r.OK {
			t.Fatal("passed")
		}
		want := map[chaos.Check]chaos.Outcome{
			chaos.CheckSyntax: chaos.OutcomePass, chaos.CheckTarget: chaos.OutcomePass, chaos.CheckKID: chaos.OutcomePass,
			chaos.CheckSignature: chaos.OutcomeFail, chaos.CheckExpiry: chaos.OutcomeFail, chaos.CheckCap: chaos.OutcomePass,
		}
		for c, o := range want {
			if got := chaostest.Result(r, c); got.Outcome != o {
				t.Errorf("%s: %+v, want %s", c, got, o)
			}
		}
		if !errors.Is(r.Err(), chaos.ErrBadSignature) {
			t.Errorf("first failure %v, want the signature", r.Err())
		}
	})

	t.Run("syntax failure skips the rest", func(t *testing.T) {
		r := v.Explain(ctx, "v=1;kid=nope")
		if r.Header != nil || chaostest.Result(r, chaos.CheckSyntax).Outcome != chaos.OutcomeFail || chaostest.Result(r, chaos.CheckSyntax).Field != "kid" {
			t.Fatalf("report %+v", r.Checks)
		}
		for _, c := range chaos.Checks()[1:] {
			if chaostest.Result(r, c).Outcome != chaos.OutcomeSkip {
				t.Errorf("%s ran after a syntax failure: %+v", c, chaostest.Result(r, c))
			}
		}
	})

	t.Run("report as JSON", func(t *testing.T) {
		b, err := json.Marshal(v.Explain(ctx, signAt(t, key, fieldsExp(t0.Add(time.Minute)))))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			OK     bool
			Header map[string]any
			Checks []map[string]string
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !got.OK || got.Header["target"] != "core-api" || got.Header["fault"] != "error" || len(got.Checks) != 7 || got.Checks[3]["outcome"] != "pass" {
			t.Errorf("json %s", b)
		}
		if _, hasSig := got.Header["sig"]; hasSig {
			t.Errorf("report JSON carries the signature: %s", b)
		}
	})
}

// The freeze check runs last, with the rule the verifier (or the caller)
// holds: a frozen fleet refuses the whole header, a void one names the field
// its issue time came from (iat, or exp for a v=1 header), and the record
// of the refusal names the freeze.
func TestFreezeCheck(t *testing.T) {
	key := testKey(t, 1)
	ctx := context.Background()
	v2 := fieldsExp(t0.Add(4 * time.Minute))
	v2.IAT = t0.Unix()
	v1 := fieldsExp(t0.Add(4 * time.Minute))
	cases := []struct {
		name    string
		rule    freezeStub
		fields  chaos.Fields
		ok      bool
		field   string
		noRecIA bool
	}{
		{"not frozen, issued after the end", freezeStub{notBefore: t0.Unix()}, v2, true, "", false},
		{"frozen: every header", freezeStub{frozen: true}, v2, false, "", false},
		{"issued a second before the end: void", freezeStub{notBefore: t0.Unix() + 1}, v2, false, "iat", false},
		{"v=1 counts as issued at exp - 15m", freezeStub{notBefore: t0.Add(4*time.Minute - chaos.MaxTTL).Unix()}, v1, true, "", true},
		{"v=1 one second short of it: void", freezeStub{notBefore: t0.Add(4*time.Minute-chaos.MaxTTL).Unix() + 1}, v1, false, "exp", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			value := signAt(t, key, tc.fields)
			v := mustVerifier(t, mustKeySet(t, key), chaos.Options{Freeze: tc.rule})
			h, err := v.VerifyAt(ctx, value, t0)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *chaos.CheckError
			if !errors.As(err, &ce) || ce.Check != chaos.CheckFreeze || ce.Field != tc.field || !errors.Is(err, chaos.ErrFrozen) {
				t.Fatalf("err %v, want the freeze check naming %q", err, tc.field)
			}
			rec := chaos.NewRejection(h, err)
			if rec.Check != chaos.CheckFreeze || rec.Freeze == nil || rec.Freeze.Ref != "INC-7" || rec.Freeze.WriteID != "w1" || !strings.Contains(rec.Reason, "alice") {
				t.Errorf("rejection %+v does not name the freeze", rec)
			}
			if (rec.IAT == 0) != tc.noRecIA {
				t.Errorf("rejection iat %d", rec.IAT)
			}
			// Without a rule, Verify stops at the cap; the caller's own
			// state decides with CheckFreezeRule, the same way.
			plain := mustVerifier(t, mustKeySet(t, key), chaos.Options{})
			h, err = plain.VerifyAt(ctx, value, t0)
			if err != nil {
				t.Fatalf("without a rule: %v", err)
			}
			if err := chaos.CheckFreezeRule(&h, tc.rule, t0); checkOf(err) != chaos.CheckFreeze {
				t.Errorf("CheckFreezeRule: %v", err)
			}
			if r := plain.ExplainAt(ctx, value, t0); !r.OK || chaostest.Result(r, chaos.CheckFreeze).Outcome != chaos.OutcomeSkip {
				t.Errorf("Explain without a rule: %+v", chaostest.Result(r, chaos.CheckFreeze))
			}
			if r := v.ExplainAt(ctx, value, t0); r.OK || chaostest.Result(r, chaos.CheckFreeze).Outcome != chaos.OutcomeFail {
				t.Errorf("Explain with the rule: %+v", chaostest.Result(r, chaos.CheckFreeze))
			}
		})
	}
}

// failingKeyring is a key source that cannot be read (Secrets Manager
// denied, say).
type failingKeyring struct{ err error }

func (f failingKeyring) Current(context.Context) (chaos.Key, error)       { return chaos.Key{}, f.err }
func (f failingKeyring) ByKID(context.Context, string) (chaos.Key, error) { return chaos.Key{}, f.err }

func TestKeyringFailureIsNotAVerdict(t *testing.T) {
	denied := errors.New("access denied to the chaos key secret")
	v := mustVerifier(t, failingKeyring{denied}, chaos.Options{Clock: clocktest.NewFake(t0)})
	value := signAt(t, testKey(t, 1), fieldsExp(t0.Add(time.Minute)))

	_, err := v.Verify(context.Background(), value)
	var ce *chaos.CheckError
	if !errors.Is(err, denied) || errors.As(err, &ce) {
		t.Fatalf("Verify = %v, want the keyring error and not a check verdict", err)
	}
	r := v.Explain(context.Background(), value)
	if r.OK || !errors.Is(r.Err(), denied) {
		t.Fatalf("Explain err %v", r.Err())
	}
	if got := chaostest.Result(r, chaos.CheckKID); got.Outcome != chaos.OutcomeError {
		t.Errorf("kid: %+v, want error", got)
	}
	if got := chaostest.Result(r, chaos.CheckSignature); got.Outcome != chaos.OutcomeSkip {
		t.Errorf("signature: %+v, want skip", got)
	}
	if got := chaostest.Result(r, chaos.CheckExpiry); got.Outcome != chaos.OutcomePass {
		t.Errorf("expiry still checked: %+v", got)
	}
}

func TestRejectionRecord(t *testing.T) {
	key := testKey(t, 1)
	v := mustVerifier(t, mustKeySet(t, key), chaos.Options{Clock: clocktest.NewFake(t0)})
	value := signAt(t, key, fieldsExp(t0.Add(-time.Second)))
	h, err := v.Verify(context.Background(), value)
	rec := chaos.NewRejection(h, err)
	if rec.Check != chaos.CheckExpiry || rec.Field != "exp" || rec.KID != key.KID() || rec.JTI != "jti-for-the-test-0001" || rec.Target != "core-api" {
		t.Errorf("rejection %+v", rec)
	}
	b, _ := json.Marshal(rec)
	sig := value[strings.LastIndex(value, "=")+1:]
	if strings.Contains(string(b), sig) || strings.Contains(string(b), "sig=") {
		t.Errorf("rejection record carries the signature: %s", b)
	}

	h, err = v.Verify(context.Background(), "garbage")
	rec = chaos.NewRejection(h, err)
	if rec.Check != chaos.CheckSyntax || rec.Field != "v" || rec.KID != "" {
		t.Errorf("syntax rejection %+v", rec)
	}
}

func TestValueFromInput(t *testing.T) {
	const v = "v=1;kid=x"
	for in, want := range map[string]string{
		v:                                 v,
		v + "\n":                          v,
		v + "\r\n":                        v,
		"X-Kosha-Chaos: " + v:             v,
		"x-kosha-chaos:" + v + "\n":       v,
		"X-KOSHA-CHAOS: \t" + v:           v,
		v + "\n\n":                        v + "\n", // only one newline is forgiven
		" " + v:                           " " + v,  // Parse reports the space
		"X-Other: " + v:                   "X-Other: " + v,
		"X-Kosha-Chaos-Extra: " + v:       "X-Kosha-Chaos-Extra: " + v,
		"-H 'X-Kosha-Chaos: " + v + "'\n": v,
		`-H "X-Kosha-Chaos: ` + v + `"`:   v,
		"-H 'X-Kosha-Chaos: " + v:         "-H 'X-Kosha-Chaos: " + v, // unbalanced quote: left for Parse
	} {
		if got := chaos.ValueFromInput(in); got != want {
			t.Errorf("ValueFromInput(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHeaderValueRefusesMoreThanOneField(t *testing.T) {
	t.Parallel()
	if v, err := chaos.HeaderValue(http.Header{}); v != "" || err != nil {
		t.Errorf("no header: %q, %v", v, err)
	}
	if v, err := chaos.HeaderValue(http.Header{chaos.HeaderName: {"v=1;a"}}); v != "v=1;a" || err != nil {
		t.Errorf("one header: %q, %v", v, err)
	}
	v, err := chaos.HeaderValue(http.Header{chaos.HeaderName: {"first", "second"}})
	var ce *chaos.CheckError
	if !errors.As(err, &ce) || ce.Check != chaos.CheckSyntax || !errors.Is(err, chaos.ErrRepeatedHeader) || v != "first" {
		t.Errorf("two headers: %q, %v; want the syntax check", v, err)
	}
}
