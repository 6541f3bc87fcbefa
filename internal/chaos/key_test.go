package chaos_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos"
)

// testKeyRaw returns 32 deterministic, random-looking bytes for seed n.
func testKeyRaw(n int) []byte {
	sum := sha256.Sum256([]byte(fmt.Sprintf("chaos test key %d", n)))
	return sum[:]
}

func testKey(t testing.TB, n int) chaos.Key {
	t.Helper()
	k, err := chaos.NewKey(testKeyRaw(n))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// leaks reports whether s contains the key in any encoding a careless print
// could produce.
func leaks(s string, raw []byte) bool {
	for _, enc := range []string{
		string(raw),
		fmt.Sprintf("%x", raw),
		fmt.Sprintf("%X", raw),
		fmt.Sprint(raw), //nolint:staticcheck // QF1010: the decimal list [1 2 3] is the leak being looked for
		fmt.Sprintf("%v", raw[:8]),
		base64.StdEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		strings.Trim(fmt.Sprint(raw), "[]"), //nolint:staticcheck // QF1010: the decimal list is the leak being looked for
	} {
		if strings.Contains(s, enc) {
			return true
		}
	}
	return false
}

func TestKeyNeverPrintsItself(t *testing.T) {
	raw := testKeyRaw(7)
	k, err := chaos.NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	type exported struct {
		Name string
		Key  chaos.Key
	}
	type unexported struct {
		name string
		key  chaos.Key
	}
	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		outputs = append(outputs,
			fmt.Sprintf(verb, k),
			fmt.Sprintf(verb, &k),
			fmt.Sprintf(verb, exported{"e", k}),
			fmt.Sprintf(verb, unexported{"u", k}),
			fmt.Sprintf(verb, []chaos.Key{k}),
			fmt.Sprintf(verb, map[string]chaos.Key{"k": k}),
		)
	}
	outputs = append(outputs, k.String(), k.GoString(), fmt.Errorf("wrap: %v", k).Error())
	j, _ := json.Marshal(exported{"e", k})
	outputs = append(outputs, string(j))
	txt, _ := k.MarshalText()
	outputs = append(outputs, string(txt))
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("minted", "key", k, "nested", exported{"e", k})
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("minted", "key", k, "ptr", &k)
	outputs = append(outputs, logs.String())

	for _, out := range outputs {
		if leaks(out, raw) {
			t.Errorf("key material leaked: %s", out)
		}
	}
	if !strings.Contains(k.String(), k.KID()) || !strings.Contains(k.String(), "redacted") {
		t.Errorf("String() = %q, want a redaction naming the kid", k)
	}
	if !strings.Contains(string(j), "redacted") {
		t.Errorf("JSON %s does not show the redaction", j)
	}
	// The one intended way out.
	if got := k.ExportBase64(); got != base64.StdEncoding.EncodeToString(raw) {
		t.Errorf("ExportBase64 = %q", got)
	}
}

func TestNewKeyCopiesAndChecks(t *testing.T) {
	raw := testKeyRaw(1)
	k, err := chaos.NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	kid := k.KID()
	raw[0] ^= 0xff
	if k2, _ := chaos.NewKey(raw); k2.KID() == kid || k.KID() != kid {
		t.Error("key did not copy its input")
	}
	if k.Len() != 32 || len(kid) != chaos.KIDLen {
		t.Errorf("len %d, kid %q", k.Len(), kid)
	}
	for name, raw := range map[string][]byte{
		"31 bytes":   testKeyRaw(2)[:31],
		"empty":      nil,
		"one byte":   bytes.Repeat([]byte{0x41}, 32),
		"all zero":   make([]byte, 64),
		"too long":   bytes.Repeat(testKeyRaw(3), 33),
		"1 too long": append(bytes.Repeat(testKeyRaw(3), 32), 1),
	} {
		if _, err := chaos.NewKey(raw); !errors.Is(err, chaos.ErrInvalidKey) {
			t.Errorf("%s: NewKey = %v, want ErrInvalidKey", name, err)
		}
	}
	if _, err := chaos.NewKey(bytes.Repeat(testKeyRaw(3), 32)); err != nil {
		t.Errorf("1024-byte key: %v", err)
	}
}

func TestKIDDerivation(t *testing.T) {
	// Independently: first 8 bytes of SHA-256("kosha-chaos-kid:" || key),
	// base64url without padding.
	raw := testKeyRaw(4)
	sum := sha256.Sum256(append([]byte("kosha-chaos-kid:"), raw...))
	want := base64.RawURLEncoding.EncodeToString(sum[:8])
	if got := testKey(t, 4).KID(); got != want {
		t.Errorf("kid %s, want %s", got, want)
	}
	if testKey(t, 4).KID() == testKey(t, 5).KID() {
		t.Error("different keys share a kid")
	}
	if !testKey(t, 4).Equal(testKey(t, 4)) || testKey(t, 4).Equal(testKey(t, 5)) || testKey(t, 4).Equal(chaos.Key{}) {
		t.Error("Equal is wrong")
	}
	if !(chaos.Key{}).IsZero() || (chaos.Key{}).KID() != "" || (chaos.Key{}).String() != "[no chaos key]" {
		t.Error("zero key misbehaves")
	}
}

func TestDecodeKeyErrorsDoNotEchoInput(t *testing.T) {
	raw := testKeyRaw(9)
	good := base64.StdEncoding.EncodeToString(raw)
	inputs := []string{
		good[:10] + "!" + good[11:],                 // bad character
		base64.URLEncoding.EncodeToString(raw),      // url alphabet
		base64.StdEncoding.EncodeToString(raw[:20]), // too short
		good[:len(good)-2] + "B=",                   // non-canonical trailing bits
		`{"key":"` + good + `"}`,                    // JSON where base64 belongs
	}
	for _, in := range inputs {
		_, err := chaos.DecodeKey(in)
		if !errors.Is(err, chaos.ErrInvalidKey) {
			t.Errorf("DecodeKey(%.12q...) = %v, want ErrInvalidKey", in, err)
			continue
		}
		if strings.Contains(err.Error(), good[:12]) || leaks(err.Error(), raw) {
			t.Errorf("error echoes the input: %v", err)
		}
	}
}

func TestGenerateKey(t *testing.T) {
	a, err := chaos.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := chaos.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != chaos.KeySize || a.Equal(b) {
		t.Errorf("generated keys: len %d, equal %v", a.Len(), a.Equal(b))
	}
	if _, err := chaos.GenerateKey(strings.NewReader("short")); err == nil {
		t.Error("a short random source produced a key")
	}
	back, err := chaos.DecodeKey(a.ExportBase64() + "\n")
	if err != nil || !back.Equal(a) {
		t.Errorf("export/decode round trip: %v", err)
	}
}
