package chaos_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

func TestSignVerifyRoundTripOnTheLocalContext(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	r := c.must(0, "chaos", "sign", "--target", "core-api", "--fault", "latency", "--ms", "250", "--p", "0.5", "--reason", "drill INC-7")
	line := strings.TrimSuffix(r.Stdout, "\n")
	value, ok := strings.CutPrefix(line, "X-Kosha-Chaos: ")
	if !ok || strings.Contains(value, "\n") {
		t.Fatalf("default output is not one header line:\n%s", r.Stdout)
	}
	exp := clitest.Epoch.Unix() + 300
	for _, want := range []string{"target=core-api", "fault=latency", "ms=250", "p=0.5", "exp=" + strconv.FormatInt(exp, 10)} {
		if !strings.Contains(value, ";"+want+";") {
			t.Errorf("header lacks %s: %s", want, value)
		}
	}
	// First use generates the local key, mode 0600, and says so.
	st, err := os.Stat(c.localKeyPath())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("local key file: %v, %v", st, err)
	}
	kid := c.must(0, "chaos", "key", "id", "-o", "json").Stdout
	keyID := clitest.Decode[struct {
		KeyOrigin string `json:"key_origin"`
		Keys      []struct {
			Stage string `json:"stage"`
			KID   string `json:"kid"`
		} `json:"keys"`
	}](t, kid)
	if len(keyID.Keys) != 1 || keyID.Keys[0].Stage != "AWSCURRENT" || keyID.KeyOrigin != "local context" {
		t.Fatalf("key id = %+v", keyID)
	}
	k := keyID.Keys[0].KID
	if !strings.Contains(value, ";kid="+k+";") {
		t.Errorf("header not signed with the local key %s: %s", k, value)
	}
	for _, want := range []string{"generated the local chaos key (kid " + k + ")", "with kid " + k, `context "local"`, "2026-11-29T19:05:00Z", "audit record "} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("sign stderr lacks %q:\n%s", want, r.Stderr)
		}
	}

	c.Clock.Advance(time.Minute)
	v := c.must(0, "chaos", "verify", value)
	for _, check := range []string{"syntax", "target", "kid", "signature", "expiry", "cap", "freeze"} {
		if !strings.Contains(v.Stdout, "\n"+check+" ") || strings.Contains(v.Stdout, "FAIL") {
			t.Errorf("verify table lacks a passing %s row:\n%s", check, v.Stdout)
		}
	}
	for _, want := range []string{"constant-time", "VALID: latency 250ms on core-api, p=0.5", "30s clock-skew allowance", `context "local"`} {
		if !strings.Contains(v.Stdout, want) {
			t.Errorf("verify output lacks %q:\n%s", want, v.Stdout)
		}
	}
	if v.Stderr != "" {
		t.Errorf("a passing verify wrote to stderr: %q", v.Stderr)
	}
	rep := clitest.Decode[verifyReport](t, c.must(0, "chaos", "verify", value, "-o", "json").Stdout)
	if !rep.OK || rep.Kind != "ChaosVerifyReport" || rep.Header == nil || rep.Header.KID != k || rep.Header.Exp != exp || len(rep.Checks) != 7 {
		t.Errorf("verify -o json = %+v", rep)
	}

	// The mint is audited: who, the fields, exp and jti, never the signature.
	recs := auditRecords(t, c, "chaos.sign")
	if len(recs) != 1 {
		t.Fatalf("%d chaos.sign records, want 1", len(recs))
	}
	rec := recs[0]
	if rec.Actor != "tester@test" || rec.Subject != "chaos#"+rep.Header.JTI || rec.Reason != "drill INC-7" || rec.Context != "local" || len(rec.Before) != 0 {
		t.Errorf("audit record = %+v", rec)
	}
	var after map[string]any
	if err := json.Unmarshal(rec.After, &after); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kid": k, "target": "core-api", "fault": "latency", "ms": 250.0, "p": 0.5, "iat": float64(clitest.Epoch.Unix()), "exp": float64(exp),
		"jti": rep.Header.JTI, "ttl": "5m0s", "expires_at": "2026-11-29T19:05:00Z", "issued_at": "2026-11-29T19:00:00Z"}
	for name, w := range want {
		if after[name] != w {
			t.Errorf("audit after.%s = %v, want %v", name, after[name], w)
		}
	}
	if _, ok := after["sig"]; ok || strings.Contains(string(rec.After), sigOf(t, value)) {
		t.Errorf("audit record carries the signature: %s", rec.After)
	}
	c.must(0, "audit", "list")
	assertNoKey(t, c, c.localKey(t))
}

func TestSignOutputFormats(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	value := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	if !strings.HasPrefix(value, "v=2;kid=") || !strings.Contains(value, fmt.Sprintf(";target=openai;fault=error;p=1;iat=%d;", clitest.Epoch.Unix())) {
		t.Errorf("-o value = %q", value)
	}
	curl := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "reset", "-o", "curl").Stdout)
	if !strings.HasPrefix(curl, "-H 'X-Kosha-Chaos: v=2;") || !strings.HasSuffix(curl, "'") {
		t.Errorf("-o curl = %q", curl)
	}
	js := clitest.Decode[signed](t, c.must(0, "chaos", "sign", "--target", "postgres", "--fault", "timeout", "--ttl", "90s", "--p", "0.25", "-o", "json").Stdout)
	if js.Kind != "ChaosHeader" || js.Header != "X-Kosha-Chaos" || js.Fields.Target != "postgres" || js.Fields.Fault != "timeout" ||
		js.Fields.P != 0.25 || js.TTL != "1m30s" || js.Fields.Exp != clitest.Epoch.Unix()+90 || js.ExpiresAt != "2026-11-29T19:01:30Z" ||
		js.AuditID == "" || js.Context != "local" || !strings.HasPrefix(js.KeySource, "local key file ") {
		t.Errorf("-o json = %+v", js)
	}
	if !strings.Contains(js.Value, ";jti="+js.Fields.JTI+";sig=") {
		t.Errorf("json value and fields disagree: %+v", js)
	}
	// Every form is accepted back by verify.
	for _, in := range []string{value, curl, "X-Kosha-Chaos: " + js.Value, "x-kosha-chaos:" + js.Value} {
		c.must(0, "chaos", "verify", "--", in)
	}
	c.must(exitcode.Usage, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "table")
	if n := len(auditRecords(t, c, "chaos.sign")); n != 3 {
		t.Errorf("%d mints audited, want 3", n)
	}
}

func TestTTLCapIsHard(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	r := c.must(exitcode.Usage, "chaos", "sign", "--target", "openai", "--fault", "error", "--ttl", "16m")
	oneErrorLine(t, r, "--ttl 16m", "15m cap")
	if r.Stdout != "" {
		t.Errorf("a refused sign printed %q", r.Stdout)
	}
	for _, ttl := range []string{"15m1s", "1h", "0s", "-5m", "500ms"} {
		c.must(exitcode.Usage, "chaos", "sign", "--target", "openai", "--fault", "error", "--ttl", ttl)
	}
	if recs := auditRecords(t, c, ""); len(recs) != 0 {
		t.Fatalf("refused mints were audited: %+v", recs)
	}
	if _, err := os.Stat(c.localKeyPath()); !os.IsNotExist(err) {
		t.Errorf("a refused mint touched the key: %v", err)
	}
	// Exactly 15 minutes is allowed, and passes the cap with no skew allowance.
	js := clitest.Decode[signed](t, c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "--ttl", "15m", "-o", "json").Stdout)
	if js.Fields.Exp-clitest.Epoch.Unix() != 900 {
		t.Errorf("ttl 15m gave exp %d s ahead", js.Fields.Exp-clitest.Epoch.Unix())
	}
	c.must(0, "chaos", "verify", js.Value, "--skew", "0")
}

func TestSignRefusesBadFlags(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig("contexts:\n  local:\n    store:\n      local: {}\n    chaos:\n      targets: [core-api, payments]\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fault", "error"}, "--target is required"},
		{[]string{"--target", "core-api"}, "--fault is required"},
		{[]string{"--target", "core-api", "--fault", "slow"}, `"slow" is not a fault`},
		{[]string{"--target", "Core_API", "--fault", "error"}, "not a target name"},
		{[]string{"--target", "openai", "--fault", "error"}, `not one of context "local"'s chaos targets (core-api, payments)`},
		{[]string{"--target", "core-api", "--fault", "latency"}, "--fault latency needs --ms"},
		{[]string{"--target", "core-api", "--fault", "latency", "--ms", "0"}, "--ms 0 is outside 1..60000"},
		{[]string{"--target", "core-api", "--fault", "latency", "--ms", "60001"}, "--ms 60001"},
		{[]string{"--target", "core-api", "--fault", "error", "--ms", "5"}, "--ms applies to --fault latency only"},
		{[]string{"--target", "core-api", "--fault", "error", "--p", "0"}, "p=0 would do nothing"},
		{[]string{"--target", "core-api", "--fault", "error", "--p", "1.5"}, "above 1"},
		{[]string{"--target", "core-api", "--fault", "error", "--p", "0.12345"}, "more than 4 decimals"},
		{[]string{"--target", "core-api", "--fault", "error", "--reason", "a\nb"}, "control character"},
	} {
		r := c.run(append([]string{"chaos", "sign"}, tc.args...)...)
		if r.Code != exitcode.Usage {
			t.Errorf("%v: exit %d, want 2\n%s", tc.args, r.Code, r.Stderr)
		}
		oneErrorLine(t, r, tc.want)
	}
	// A configured target is allowed, and --p is canonicalised.
	js := clitest.Decode[signed](t, c.must(0, "chaos", "sign", "--target", "payments", "--fault", "error", "--p", "0.50", "-o", "json").Stdout)
	if js.Fields.Target != "payments" || !strings.Contains(js.Value, ";p=0.5;") {
		t.Errorf("sign with a configured target = %+v", js)
	}
	if n := len(auditRecords(t, c, "")); n != 1 {
		t.Errorf("%d audit records, want only the successful mint", n)
	}
}

func TestKeyFileFlag(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	open, content := writeKey(t, t.TempDir(), 0o644)
	r := c.must(exitcode.Usage, "chaos", "sign", "--target", "openai", "--fault", "error", "--key-file", open)
	oneErrorLine(t, r, "mode 0644", "chmod 600 "+open)
	if r.Stdout != "" || len(auditRecords(t, c, "")) != 0 {
		t.Fatalf("a refused key file still minted: %q", r.Stdout)
	}
	c.must(exitcode.Usage, "chaos", "key", "id", "--key-file", open)

	if err := os.Chmod(open, 0o600); err != nil {
		t.Fatal(err)
	}
	r = c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "--key-file", open, "-o", "value")
	if !strings.Contains(r.Stderr, "from key file "+open) {
		t.Errorf("sign does not name the key file it used:\n%s", r.Stderr)
	}
	value := strings.TrimSpace(r.Stdout)
	c.must(0, "chaos", "verify", value, "--key-file", open)
	// The local context's own key does not hold this kid.
	v := c.must(exitcode.Error, "chaos", "verify", value)
	oneErrorLine(t, v, "kid check")
	if !strings.Contains(v.Stdout, "kid        FAIL") || !strings.Contains(v.Stdout, "signature  skipped") {
		t.Errorf("verify with the wrong keys:\n%s", v.Stdout)
	}
	if _, err := os.Stat(c.localKeyPath()); err != nil {
		t.Errorf("verifying without --key-file uses the local key: %v", err)
	}
	// A context's chaos.key-file works like the flag, and the flag wins.
	c.WriteConfig("contexts:\n  local:\n    store:\n      local: {}\n    chaos:\n      key-file: " + open + "\n")
	c.must(0, "chaos", "verify", value)
	other, _ := writeKey(t, t.TempDir(), 0o600)
	if err := os.WriteFile(other, []byte("c2hvcnQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must(exitcode.Usage, "chaos", "verify", value, "--key-file", other)
	c.must(exitcode.NotFound, "chaos", "sign", "--target", "openai", "--fault", "error", "--key-file", filepath.Join(t.TempDir(), "absent"))
	assertNoKey(t, c, content)
}

func TestKeyFromEnvironmentVariable(t *testing.T) {
	c := newCLI(t)
	c.WriteConfig("contexts:\n  ci:\n    store:\n      local: {}\n    chaos:\n      key-env: CI_CHAOS_KEY\ncurrent-context: ci\n")
	t.Setenv("CI_CHAOS_KEY", "")
	os.Unsetenv("CI_CHAOS_KEY")
	r := c.must(exitcode.NotFound, "chaos", "sign", "--target", "openai", "--fault", "error")
	oneErrorLine(t, r, "environment variable CI_CHAOS_KEY is not set")

	_, content := writeKey(t, t.TempDir(), 0o600)
	t.Setenv("CI_CHAOS_KEY", strings.TrimSpace(content))
	r = c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value")
	if !strings.Contains(r.Stderr, "environment variable CI_CHAOS_KEY") || !strings.Contains(r.Stderr, `context "ci"`) {
		t.Errorf("sign does not name its key source:\n%s", r.Stderr)
	}
	c.must(0, "chaos", "verify", strings.TrimSpace(r.Stdout))
	ids := c.must(0, "chaos", "key", "id")
	if !strings.Contains(ids.Stdout, "AWSCURRENT") || !strings.Contains(ids.Stderr, "from chaos.key-env") {
		t.Errorf("key id:\n%s%s", ids.Stdout, ids.Stderr)
	}
	r = c.must(exitcode.Usage, "chaos", "key", "rotate", "--yes")
	oneErrorLine(t, r, "cannot rotate", "environment variable CI_CHAOS_KEY")
	if _, err := os.Stat(c.localKeyPath()); !os.IsNotExist(err) {
		t.Errorf("an env-var context generated a local key: %v", err)
	}
	assertNoKey(t, c, content)
}

func TestVerifyNamesTheFailedCheckAndField(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	value := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "latency", "--ms", "250", "--p", "0.5", "-o", "value").Stdout)
	sig := sigOf(t, value)
	for _, tc := range []struct {
		name, value, check, field string
	}{
		{"non-canonical p", strings.Replace(value, ";p=0.5;", ";p=0.50;", 1), "syntax", "p"},
		{"leading zero ms", strings.Replace(value, ";ms=250;", ";ms=0250;", 1), "syntax", "ms"},
		{"upper-case fault", strings.Replace(value, "fault=latency", "fault=LATENCY", 1), "syntax", "fault"},
		{"missing sig", strings.Replace(value, ";sig="+sig, "", 1), "syntax", "sig"},
		{"padded sig", value + "=", "syntax", "sig"},
		{"version 3", strings.Replace(value, "v=2;", "v=3;", 1), "syntax", "v"},
		{"iat dropped", regexp.MustCompile(`;iat=[0-9]+`).ReplaceAllString(value, ""), "syntax", "iat"},
		{"ms on an error fault", strings.Replace(value, "fault=latency", "fault=error", 1), "syntax", "ms"},
		{"empty", "", "syntax", ""},
		{"tampered probability", strings.Replace(value, ";p=0.5;", ";p=0.6;", 1), "signature", "sig"},
		{"target not allowed", strings.Replace(value, "target=openai", "target=billing", 1), "target", "target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.run("chaos", "verify", tc.value)
			if r.Code != exitcode.Error {
				t.Fatalf("exit %d, want 1\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			oneErrorLine(t, r, "rejected by the "+tc.check+" check")
			if tc.check == "syntax" && tc.field != "" && !strings.Contains(r.Stdout, "FAIL     field "+tc.field+": ") {
				t.Errorf("table does not name field %s:\n%s", tc.field, r.Stdout)
			}
			rep := clitest.Decode[verifyReport](t, c.must(exitcode.Error, "chaos", "verify", tc.value, "-o", "json").Stdout)
			if rep.OK || rep.outcome(tc.check) != "fail" {
				t.Errorf("json report: %+v", rep)
			}
			for _, ch := range rep.Checks {
				if ch.Check == tc.check && ch.Field != tc.field {
					t.Errorf("json report names field %q, want %q", ch.Field, tc.field)
				}
			}
		})
	}
}

func TestVerifyExpiryAndCapWithSkew(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	value := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "core-api", "--fault", "error", "--ttl", "1m", "-o", "value").Stdout)
	c.Clock.Advance(59 * time.Second)
	c.must(0, "chaos", "verify", value)
	c.Clock.Advance(time.Second) // now == exp: dead
	r := c.must(exitcode.Error, "chaos", "verify", value)
	oneErrorLine(t, r, "rejected by the expiry check", "expired at 2026-11-29T19:01:00Z")
	rep := clitest.Decode[verifyReport](t, c.must(exitcode.Error, "chaos", "verify", value, "-o", "json").Stdout)
	if rep.outcome("signature") != "pass" || rep.outcome("expiry") != "fail" {
		t.Errorf("an expired genuine header: %+v", rep.Checks)
	}

	// A full-length header from a minter whose clock runs 20s ahead passes
	// thanks to the skew allowance, and fails without it.
	c.Clock.Set(clitest.Epoch)
	value = strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "core-api", "--fault", "error", "--ttl", "15m", "-o", "value").Stdout)
	c.Clock.Set(clitest.Epoch.Add(-20 * time.Second))
	v := c.must(0, "chaos", "verify", value)
	if !strings.Contains(v.Stdout, "within the 15m cap plus 30s clock-skew allowance") {
		t.Errorf("cap row:\n%s", v.Stdout)
	}
	r = c.must(exitcode.Error, "chaos", "verify", value, "--skew", "0")
	oneErrorLine(t, r, "rejected by the cap check", "15m20s ahead")
	c.Clock.Set(clitest.Epoch.Add(-31 * time.Second))
	c.must(exitcode.Error, "chaos", "verify", value)
	c.must(0, "chaos", "verify", value, "--skew", "1m")
	c.must(exitcode.Usage, "chaos", "verify", value, "--skew", "3m")
}

func TestVerifyReadsStdin(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	header := c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error").Stdout
	c.Stdin = header // "X-Kosha-Chaos: ...\n", as piped from sign
	c.must(0, "chaos", "verify", "-")
	c.must(0, "chaos", "verify") // no argument, stdin not a terminal
	c.Stdin = strings.Replace(header, "fault=error", "fault=reset", 1)
	r := c.must(exitcode.Error, "chaos", "verify", "-")
	oneErrorLine(t, r, "signature check")
	c.Stdin = strings.Repeat("x", 70<<10)
	c.must(exitcode.Usage, "chaos", "verify", "-")
	c.Stdin, c.TTY = "", true
	r = c.must(exitcode.Usage, "chaos", "verify")
	oneErrorLine(t, r, "give the header to verify")
}

func TestKeyRotateOnTheLocalContext(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.WriteConfig("contexts:\n  prod-like:\n    store:\n      local: {}\n    protected: true\ncurrent-context: prod-like\n")
	// No key yet: a dry run says the first key would be created, and creates nothing.
	r := c.must(0, "chaos", "key", "rotate", "--dry-run")
	if !strings.Contains(r.Stdout, "Would store the first chaos key") || !strings.Contains(r.Stderr, "dry run, nothing written") {
		t.Errorf("dry run on an empty source:\n%s%s", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(c.localKeyPath()); !os.IsNotExist(err) {
		t.Fatalf("a dry run created a key: %v", err)
	}
	h1 := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	k1 := c.localKey(t)

	r = c.must(exitcode.Refused, "chaos", "key", "rotate")
	oneErrorLine(t, r, `context "prod-like" is protected`, "--yes")
	if c.localKey(t) != k1 || len(auditRecords(t, c, "chaos.key-rotate")) != 0 {
		t.Fatal("a refused rotation changed the key or was audited")
	}
	// Typed confirmation on a terminal.
	c.TTY, c.Stdin = true, "nope\n"
	c.must(exitcode.Refused, "chaos", "key", "rotate")
	c.Stdin = "prod-like\n"
	r = c.must(0, "chaos", "key", "rotate")
	c.TTY, c.Stdin = false, ""
	c.Clock.Advance(time.Minute) // audit list orders by time
	k2 := c.localKey(t)
	if k2 == k1 {
		t.Fatal("rotation kept the key")
	}
	if !strings.Contains(r.Stdout, "now signs") || !strings.Contains(r.Stdout, "is AWSPREVIOUS") {
		t.Errorf("rotate output:\n%s", r.Stdout)
	}
	// The header signed before the rotation still verifies; new ones use the new key.
	c.must(0, "chaos", "verify", h1)
	h2 := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)

	dry := clitest.Decode[struct {
		DryRun     bool      `json:"dry_run"`
		Before     kidState  `json:"before"`
		After      *kidState `json:"after"`
		RetiredKID string    `json:"retired_kid"`
	}](t, c.must(0, "chaos", "key", "rotate", "--dry-run", "-o", "json").Stdout)
	ids := clitest.Decode[struct {
		Keys []struct {
			Stage string `json:"stage"`
			KID   string `json:"kid"`
		} `json:"keys"`
	}](t, c.must(0, "chaos", "key", "id", "-o", "json").Stdout)
	if len(ids.Keys) != 2 || !dry.DryRun || dry.After != nil || dry.RetiredKID != ids.Keys[1].KID {
		t.Fatalf("dry run %+v, keys %+v", dry, ids)
	}
	if c.localKey(t) != k2 {
		t.Fatal("a dry run rotated")
	}
	res := clitest.Decode[struct {
		Before     kidState `json:"before"`
		After      kidState `json:"after"`
		RetiredKID string   `json:"retired_kid"`
		AuditID    string   `json:"audit_id"`
	}](t, c.must(0, "chaos", "key", "rotate", "--yes", "-o", "json").Stdout)
	if res.After.PreviousKID != ids.Keys[0].KID || res.RetiredKID != ids.Keys[1].KID || res.AuditID == "" {
		t.Errorf("second rotation = %+v", res)
	}
	// h1's key was rotated out twice: gone.
	r = c.must(exitcode.Error, "chaos", "verify", h1)
	oneErrorLine(t, r, "kid check", ids.Keys[1].KID)
	c.must(0, "chaos", "verify", h2)

	recs := auditRecords(t, c, "chaos.key-rotate")
	if len(recs) != 2 || recs[0].Subject != "chaos-key#local" || recs[0].Context != "prod-like" {
		t.Fatalf("rotation audit = %+v", recs)
	}
	var after map[string]string
	if err := json.Unmarshal(recs[0].After, &after); err != nil || after["current_kid"] != res.After.CurrentKID || after["previous_kid"] != ids.Keys[0].KID || len(after) != 2 {
		t.Errorf("rotation audit after = %s (%v)", recs[0].After, err)
	}
	if got, want := clitest.Decode[map[string]string](t, string(recs[0].Before)), (map[string]string{"current_kid": ids.Keys[0].KID, "previous_kid": ids.Keys[1].KID}); !maps.Equal(got, want) {
		t.Errorf("second rotation audit before = %v, want %v", got, want)
	}
	if got, want := clitest.Decode[map[string]string](t, string(recs[1].Before)), (map[string]string{"current_kid": ids.Keys[1].KID}); !maps.Equal(got, want) {
		t.Errorf("first rotation audit before = %v, want %v", got, want)
	}
	for _, k := range []string{k1, k2, c.localKey(t)} {
		assertNoKey(t, c, k)
	}
}

func TestNoKeySourceConfigured(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	// A DynamoDB context (never contacted: the command fails first) with no chaos settings.
	c.WriteConfig(`current-context: remote
contexts:
  remote:
    store:
      dynamodb: {table: kosha-control, region: eu-west-1, endpoint-url: "http://127.0.0.1:1", static-credentials: true}
`)
	for _, args := range [][]string{
		{"chaos", "sign", "--target", "openai", "--fault", "error"},
		{"chaos", "verify", "v=1"},
		{"chaos", "key", "id"},
		{"chaos", "key", "rotate", "--yes"},
	} {
		r := c.must(exitcode.Usage, args...)
		oneErrorLine(t, r, `context "remote" has no chaos key source`, "koshactl config set-context remote --chaos-secret-id ID", "--key-file")
	}
}

func TestSecretIDOnALocalContextNeedsAWS(t *testing.T) {
	c := newCLI(t)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	c.WriteConfig("contexts:\n  local:\n    store:\n      local: {}\n    chaos:\n      secret-id: kosha/chaos/dev\n")
	r := c.must(exitcode.Usage, "chaos", "sign", "--target", "openai", "--fault", "error")
	oneErrorLine(t, r, `Secrets Manager secret "kosha/chaos/dev"`, "no region", "--key-file")
	path, _ := writeKey(t, t.TempDir(), 0o600)
	c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "--key-file", path)
}

type kidState struct {
	CurrentKID  string `json:"current_kid"`
	PreviousKID string `json:"previous_kid"`
	VersionID   string `json:"version_id"`
}
