package chaos_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --debug through the production AWS configuration (awsconf, credentials
// from the environment) against a fake Secrets Manager: every operation is
// named with its status and request id, and neither the credentials, the
// signature nor the chaos key appear anywhere koshactl printed.
func TestDebugLogsSecretsManagerCallsWithoutSecrets(t *testing.T) {
	const (
		accessKey    = "AKIDDEBUGTESTKEY0001"
		secretKey    = "debug-test-secret-access-key-value" //nolint:gosec // G101: a made-up value the output must not echo
		sessionToken = "debug-test-session-token-value"     //nolint:gosec // G101: a made-up value the output must not echo
	)
	c := newCLI(t)
	fake := newFakeSM(c, "kosha/chaos/dev")
	target, err := url.Parse(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target) // the fake, answering with a request id as AWS does
	proxy.ModifyResponse = func(r *http.Response) error { r.Header.Set("X-Amzn-Requestid", "req-debug-0001"); return nil }
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_SESSION_TOKEN", sessionToken)
	t.Setenv("AWS_MAX_ATTEMPTS", "")

	c.WriteConfig(smConfig)
	c.must(0, "chaos", "key", "rotate")
	quiet := c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value")
	if strings.Contains(quiet.Stderr, "debug:") {
		t.Fatalf("without --debug nothing is logged:\n%s", quiet.Stderr)
	}

	r := c.must(0, "--debug", "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value")
	want := `debug: aws secrets manager GetSecretValue: HTTP 200 in 0s, 1 attempt (0 retries), request id "req-debug-0001"`
	if !strings.Contains(r.Stderr, want) {
		t.Fatalf("--debug stderr lacks %q:\n%s", want, r.Stderr)
	}
	if strings.Contains(r.Stdout, "debug:") {
		t.Fatalf("debug lines belong on stderr, stdout:\n%s", r.Stdout)
	}
	c.Clock.Advance(30 * time.Minute) // past the rotation's minimum key age
	rot := c.must(0, "chaos", "key", "rotate", "--debug")
	for _, op := range []string{"GetSecretValue: HTTP 200", "PutSecretValue: HTTP 200"} {
		if !strings.Contains(rot.Stderr, "debug: aws secrets manager "+op) {
			t.Errorf("rotate --debug lacks %s:\n%s", op, rot.Stderr)
		}
	}

	for _, out := range c.printed {
		for _, secret := range []string{accessKey, secretKey, sessionToken, "Authorization", "aws4_request", "Signature="} {
			if strings.Contains(out, secret) {
				t.Fatalf("%q appeared in output:\n%s", secret, out)
			}
		}
	}
	for _, stored := range fake.Values() {
		assertNoKey(t, c, stored)
	}
}
