package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
	"github.com/kosha-platform/koshactl/internal/testutil/vectors"
)

// vectorFile mirrors docs/contracts/vectors/chaos-header.json, which
// TestContractVectors generates from this package (make vectors); the
// Python reference in sdk/python checks a second reading of the contract
// against the same file.
type vectorFile struct {
	Description     string            `json:"description"`
	Contract        string            `json:"contract"`
	Header          string            `json:"header"`
	Targets         []string          `json:"targets"`
	MaxAheadSeconds int               `json:"max_ahead_seconds"`
	SkewSeconds     int               `json:"skew_seconds"`
	Keys            map[string]vecKey `json:"keys"`
	Valid           []validVector     `json:"valid"`
	Invalid         []invalidVector   `json:"invalid"`
	KeyEncodings    []keyEncoding     `json:"key_encodings"`
	FuzzVerify      []fuzzVerify      `json:"fuzz_verify"`
	FuzzSign        []fuzzSign        `json:"fuzz_sign"`
}

type vecKey struct {
	KeyB64 string `json:"key_b64"`
	KID    string `json:"kid"`
}

type vecFields struct {
	Target string `json:"target"`
	Fault  string `json:"fault"`
	P      string `json:"p"`
	Exp    int64  `json:"exp"`
	JTI    string `json:"jti"`
	Ms     int    `json:"ms,omitempty"`
	// IAT is set for a v=2 header, absent for v=1.
	IAT int64 `json:"iat,omitempty"`
}

type validVector struct {
	Name         string    `json:"name"`
	Key          string    `json:"key"`
	Fields       vecFields `json:"fields"`
	Now          float64   `json:"now"`
	Keyring      []string  `json:"keyring,omitempty"`
	SigningInput string    `json:"signing_input"`
	Sig          string    `json:"sig"`
	Value        string    `json:"value"`
}

type invalidVector struct {
	Name    string   `json:"name"`
	Value   string   `json:"value"`
	Now     float64  `json:"now"`
	Keyring []string `json:"keyring,omitempty"`
	Check   string   `json:"check"`
	Field   string   `json:"field"`
}

type keyEncoding struct {
	Name  string `json:"name"`
	Input string `json:"input"`
	KID   string `json:"kid,omitempty"`
	Error bool   `json:"error,omitempty"`
}

// fuzzVerify is one input of the FuzzVerify/FuzzParse corpus
// (testdata/fuzz), verified with keys k1 and k2 and the default options.
type fuzzVerify struct {
	Name    string   `json:"name"`
	Value   string   `json:"value"`
	Now     float64  `json:"now"`
	Keyring []string `json:"keyring"`
	OK      bool     `json:"ok"`
	Check   string   `json:"check"`
	Field   string   `json:"field"`
}

// fuzzSign is one input of the FuzzSignRoundTrip corpus: raw fields and a
// raw key, and what signing them gives.
type fuzzSign struct {
	Name   string `json:"name"`
	KeyB64 string `json:"key_b64"`
	// KeyError: the key is not usable (Sign is never reached).
	KeyError bool   `json:"key_error,omitempty"`
	Target   string `json:"target"`
	// Fault is the fault's number: 1 latency, 2 error, 3 timeout, 4 reset; others invalid.
	Fault int `json:"fault"`
	Ms    int `json:"ms"`
	// PUnits is p in units of 0.0001 (1..10000 valid).
	PUnits int    `json:"p_units"`
	Exp    int64  `json:"exp"`
	JTI    string `json:"jti"`
	// Value is the signed header, or "" when Error.
	Value string `json:"value,omitempty"`
	Error bool   `json:"error,omitempty"`
}

func loadVectors(t testing.TB) *vectorFile {
	t.Helper()
	b, err := os.ReadFile(vectors.Path(t, "chaos-header.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatalf("parse chaos-header.json: %v", err)
	}
	if len(vf.Valid) == 0 || len(vf.Invalid) == 0 || len(vf.KeyEncodings) == 0 {
		t.Fatal("chaos-header.json has no vectors")
	}
	return &vf
}

func unixFloat(f float64) time.Time {
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64(math.Round((f-sec)*1e9)))
}

// vectorEnv decodes the vector keys and builds verifiers for a keyring.
type vectorEnv struct {
	t    *testing.T
	vf   *vectorFile
	keys map[string]chaos.Key
}

func newVectorEnv(t *testing.T) *vectorEnv {
	vf := loadVectors(t)
	env := &vectorEnv{t: t, vf: vf, keys: map[string]chaos.Key{}}
	for name, k := range vf.Keys {
		key, err := chaos.DecodeKey(k.KeyB64)
		if err != nil {
			t.Fatalf("key %s: %v", name, err)
		}
		if key.KID() != k.KID {
			t.Errorf("key %s: kid %s, vectors say %s", name, key.KID(), k.KID)
		}
		env.keys[name] = key
	}
	return env
}

func (e *vectorEnv) verifier(names []string) *chaos.Verifier {
	e.t.Helper()
	if names == nil {
		for n := range e.vf.Keys {
			names = append(names, n)
		}
	}
	var ks []chaos.Key
	for _, n := range names {
		ks = append(ks, e.keys[n])
	}
	set, err := chaostest.NewKeySet(ks[0], ks[1:]...)
	if err != nil {
		e.t.Fatal(err)
	}
	var targets []chaos.Target
	for _, s := range e.vf.Targets {
		targets = append(targets, chaos.Target(s))
	}
	v, err := chaos.NewVerifier(set, chaos.Options{
		Targets:  targets,
		MaxAhead: time.Duration(e.vf.MaxAheadSeconds) * time.Second,
		Skew:     time.Duration(e.vf.SkewSeconds) * time.Second,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

func TestVectorsHeaderName(t *testing.T) {
	if vf := loadVectors(t); vf.Header != chaos.HeaderName {
		t.Errorf("vectors name header %q, package %q", vf.Header, chaos.HeaderName)
	}
}

// TestVectorsValidSign checks the first direction: signing each vector's
// fields yields byte-for-byte the value the reference implementation made.
func TestVectorsValidSign(t *testing.T) {
	env := newVectorEnv(t)
	for _, v := range env.vf.Valid {
		t.Run(v.Name, func(t *testing.T) {
			fault, err := chaos.ParseFault(v.Fields.Fault)
			if err != nil {
				t.Fatal(err)
			}
			p, err := chaos.ParseProb(v.Fields.P)
			if err != nil {
				t.Fatal(err)
			}
			if p.String() != v.Fields.P {
				t.Errorf("p %q formats as %q", v.Fields.P, p)
			}
			f := chaos.Fields{Target: chaos.Target(v.Fields.Target), Fault: fault, Ms: v.Fields.Ms, P: p, IAT: v.Fields.IAT, Exp: v.Fields.Exp, JTI: v.Fields.JTI}
			h, err := chaos.SignHeader(env.keys[v.Key], f)
			if err != nil {
				t.Fatalf("sign: %v", err)
			}
			if got := h.SigningInput(); got != v.SigningInput {
				t.Errorf("signing input\n got %s\nwant %s", got, v.SigningInput)
			}
			if got := h.SigString(); got != v.Sig {
				t.Errorf("sig %s, want %s", got, v.Sig)
			}
			if got := h.Value(); got != v.Value {
				t.Errorf("value\n got %s\nwant %s", got, v.Value)
			}
		})
	}
}

// TestVectorsValidVerify checks the other direction: each reference value
// parses to the stated fields and passes every check.
func TestVectorsValidVerify(t *testing.T) {
	env := newVectorEnv(t)
	for _, v := range env.vf.Valid {
		t.Run(v.Name, func(t *testing.T) {
			ver := env.verifier(v.Keyring)
			now := unixFloat(v.Now)
			h, err := ver.VerifyAt(context.Background(), v.Value, now)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if string(h.Target) != v.Fields.Target || h.Fault.String() != v.Fields.Fault || h.Ms != v.Fields.Ms ||
				h.P.String() != v.Fields.P || h.IAT != v.Fields.IAT || h.Exp != v.Fields.Exp || h.JTI != v.Fields.JTI || h.KID != env.keys[v.Key].KID() {
				t.Errorf("parsed %+v, vector fields %+v", h.Fields, v.Fields)
			}
			if r := ver.ExplainAt(context.Background(), v.Value, now); !r.OK {
				t.Errorf("explain: %+v", r.Checks)
			}
		})
	}
}

// TestVectorsInvalid checks every invalid vector is rejected by the stated
// check (and, for syntax, names the stated field), by both Verify and
// Explain.
func TestVectorsInvalid(t *testing.T) {
	env := newVectorEnv(t)
	for _, v := range env.vf.Invalid {
		t.Run(v.Name, func(t *testing.T) {
			ver := env.verifier(v.Keyring)
			now := unixFloat(v.Now)
			_, err := ver.VerifyAt(context.Background(), v.Value, now)
			var ce *chaos.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("verify returned %v, want a *CheckError", err)
			}
			if string(ce.Check) != v.Check {
				t.Errorf("failed the %s check (%v), want %s", ce.Check, err, v.Check)
			}
			if v.Check == "syntax" && ce.Field != v.Field {
				t.Errorf("named field %q (%v), want %q", ce.Field, err, v.Field)
			}
			r := ver.ExplainAt(context.Background(), v.Value, now)
			if r.OK {
				t.Fatal("explain passed an invalid header")
			}
			if !errors.As(r.Err(), &ce) || string(ce.Check) != v.Check {
				t.Errorf("explain's first failure is %v, want the %s check", r.Err(), v.Check)
			}
			if res := chaostest.Result(r, chaos.Check(v.Check)); res.Outcome != chaos.OutcomeFail || res.Reason == "" {
				t.Errorf("explain's %s result %+v, want a failure with a reason", v.Check, res)
			}
		})
	}
}

func TestVectorsKeyEncodings(t *testing.T) {
	vf := loadVectors(t)
	for _, e := range vf.KeyEncodings {
		t.Run(e.Name, func(t *testing.T) {
			k, err := chaos.DecodeKey(e.Input)
			if e.Error {
				if err == nil {
					t.Fatalf("decoded to kid %s, want an error", k.KID())
				}
				if !errors.Is(err, chaos.ErrInvalidKey) {
					t.Errorf("error %v does not match ErrInvalidKey", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.KID() != e.KID {
				t.Errorf("kid %s, want %s", k.KID(), e.KID)
			}
		})
	}
}
