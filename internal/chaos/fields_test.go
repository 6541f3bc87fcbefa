package chaos_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
)

func TestParseProbOperatorInput(t *testing.T) {
	ok := map[string]string{
		"1": "1", "1.0": "1", "1.0000": "1", "0.5": "0.5", ".5": "0.5", "0.50": "0.5", "00.5": "0.5",
		"0.0001": "0.0001", "0.9999": "0.9999", "0.25": "0.25", "0.123": "0.123", "0.10000": "0.1",
	}
	for in, want := range ok {
		p, err := chaos.ParseProb(in)
		if err != nil {
			t.Errorf("ParseProb(%q): %v", in, err)
			continue
		}
		if p.String() != want {
			t.Errorf("ParseProb(%q) = %s, want %s", in, p, want)
		}
	}
	bad := map[string]string{
		"":        "empty",
		"0":       "not above 0",
		"0.0":     "not above 0",
		"0.00001": "more than 4 decimals",
		"0.12345": "more than 4 decimals",
		"1.0001":  "above 1",
		"2":       "above 1",
		"5e-1":    "exponent",
		"1E0":     "exponent",
		"-0.5":    "sign",
		"+0.5":    "sign",
		"0.5.":    "not a decimal",
		"1.":      "not a decimal",
		".":       "not a decimal",
		"half":    "not a decimal",
		"0,5":     "not a decimal",
		" 0.5":    "not a decimal",
		"50%":     "not a decimal",
	}
	for in, want := range bad {
		_, err := chaos.ParseProb(in)
		var fe *chaos.FieldError
		if !errors.As(err, &fe) || fe.Field != "p" {
			t.Errorf("ParseProb(%q) = %v, want a FieldError for p", in, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ParseProb(%q) error %q does not say %q", in, err, want)
		}
	}
}

// TestProbEveryValueRoundTrips checks all 10000 probabilities: the canonical
// spelling parses back to the same value, both from operator input and off
// the wire inside a signed header.
func TestProbEveryValueRoundTrips(t *testing.T) {
	key := testKey(t, 1)
	for p := chaos.Prob(1); p <= chaos.ProbOne; p++ {
		units := int(p)
		s := p.String()
		back, err := chaos.ParseProb(s)
		if err != nil || back != p {
			t.Fatalf("%d units formats as %q, which parses to %v, %v", units, s, back, err)
		}
		if units%97 != 0 && units != 1 && units != int(chaos.ProbOne) {
			continue // the wire check below is slower; sample it
		}
		f := chaos.Fields{Target: chaos.TargetOpenAI, Fault: chaos.FaultError, P: p, Exp: 2000000000, JTI: "abcdefghijklmnop"}
		v, err := chaostest.Sign(key, f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := chaos.Parse(v)
		if err != nil || h.P != p {
			t.Fatalf("p=%s: header %q parses to p=%v, %v", s, v, h.P, err)
		}
	}
	if got, _ := json.Marshal(chaos.Prob(2500)); string(got) != "0.25" {
		t.Errorf("JSON of 0.25 is %s", got)
	}
	if f := chaos.Prob(5000).Float64(); f != 0.5 {
		t.Errorf("Float64 of 0.5 is %v", f)
	}
}

func TestFaults(t *testing.T) {
	for _, f := range chaos.Faults() {
		back, err := chaos.ParseFault(f.String())
		if err != nil || back != f {
			t.Errorf("fault %s round-trips to %v, %v", f, back, err)
		}
		if f.Describe() == "unknown fault" {
			t.Errorf("fault %s has no description", f)
		}
	}
	for _, s := range []string{"", "Latency", "drop", "latency ", "503"} {
		if _, err := chaos.ParseFault(s); !errors.Is(err, chaos.ErrSyntax) {
			t.Errorf("ParseFault(%q) = %v, want a syntax error", s, err)
		}
	}
	if s := chaos.Fault(9).String(); s != "Fault(9)" {
		t.Errorf("invalid fault prints %q", s)
	}
	if _, err := json.Marshal(chaos.Fault(0)); err == nil {
		t.Error("marshaling the zero fault succeeded")
	}
	var f chaos.Fault
	if err := json.Unmarshal([]byte(`"timeout"`), &f); err != nil || f != chaos.FaultTimeout {
		t.Errorf("unmarshal timeout: %v, %v", f, err)
	}
}

func TestParseTarget(t *testing.T) {
	for _, s := range []string{"core-api", "a", "x9", "screening-sim", strings.Repeat("a", 63)} {
		if _, err := chaos.ParseTarget(s); err != nil {
			t.Errorf("ParseTarget(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "-a", "a-", "Core", "core_api", "core.api", "core api", strings.Repeat("a", 64), "ä"} {
		if _, err := chaos.ParseTarget(s); !errors.Is(err, chaos.ErrSyntax) {
			t.Errorf("ParseTarget(%q) = %v, want a syntax error", s, err)
		}
	}
	d := chaos.DefaultTargets()
	d[0] = "mutated"
	if chaos.DefaultTargets()[0] != chaos.TargetCoreAPI {
		t.Error("DefaultTargets shares its slice")
	}
}

func TestFlagValues(t *testing.T) {
	// The CLI binds these directly as flag values.
	var (
		target chaos.Target
		fault  chaos.Fault
		p      chaos.Prob
	)
	for _, tc := range []struct {
		v interface {
			Set(string) error
			Type() string
		}
		in string
	}{{&target, "postgres"}, {&fault, "reset"}, {&p, "0.30"}} {
		if err := tc.v.Set(tc.in); err != nil {
			t.Errorf("Set(%q) as %s: %v", tc.in, tc.v.Type(), err)
		}
	}
	if target != chaos.TargetPostgres || fault != chaos.FaultReset || p.String() != "0.3" {
		t.Errorf("flags parsed to %s %s %s", target, fault, p)
	}
	if err := p.Set("2"); err == nil || p.String() != "0.3" {
		t.Errorf("a failed Set changed the value to %s (err %v)", p, err)
	}
}

func TestFieldsValidate(t *testing.T) {
	good := chaos.Fields{Target: "core-api", Fault: chaos.FaultLatency, Ms: 100, P: chaos.ProbOne, Exp: 1767225900, JTI: "abcdefghijklmnop"}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid fields: %v", err)
	}
	cases := []struct {
		field string
		edit  func(*chaos.Fields)
	}{
		{"target", func(f *chaos.Fields) { f.Target = "" }},
		{"fault", func(f *chaos.Fields) { f.Fault = 0 }},
		{"ms", func(f *chaos.Fields) { f.Ms = 0 }},
		{"ms", func(f *chaos.Fields) { f.Ms = 60001 }},
		{"ms", func(f *chaos.Fields) { f.Fault = chaos.FaultError }}, // ms set without latency
		{"p", func(f *chaos.Fields) { f.P = 0 }},
		{"p", func(f *chaos.Fields) { f.P = chaos.ProbOne + 1 }},
		{"exp", func(f *chaos.Fields) { f.Exp = 0 }},
		{"exp", func(f *chaos.Fields) { f.Exp = 100000000000 }},
		{"jti", func(f *chaos.Fields) { f.JTI = "short" }},
		{"jti", func(f *chaos.Fields) { f.JTI = "abcdefghijklmno=" }},
	}
	for _, tc := range cases {
		f := good
		tc.edit(&f)
		err := f.Validate()
		var fe *chaos.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("fields %+v: error %v, want one naming %s", f, err, tc.field)
		}
	}
}
