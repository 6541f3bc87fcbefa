package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

// fakeSM speaks enough of the Secrets Manager JSON 1.1 protocol for
// GetSecretValue and PutSecretValue, moving the AWSCURRENT and AWSPREVIOUS
// stages on put as the service does. Anything else fails the test.
type fakeSM struct {
	t *testing.T

	mu       sync.Mutex
	secrets  map[string][]*smVersion
	calls    map[string]int
	deny     string // operation answered with AccessDeniedException
	versions int
}

type smVersion struct {
	id, value, token string
	stages           []string
}

func newFakeSM(t *testing.T, secretIDs ...string) (*fakeSM, *httptest.Server) {
	f := &fakeSM{t: t, secrets: map[string][]*smVersion{}, calls: map[string]int{}}
	for _, id := range secretIDs {
		f.secrets[id] = nil
	}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

// values returns every SecretString ever stored.
func (f *fakeSM) values() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, vs := range f.secrets {
		for _, v := range vs {
			out = append(out, v.value)
		}
	}
	return out
}

func (f *fakeSM) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeSM) setDeny(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deny = op
}

func (f *fakeSM) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager.")
	if !strings.Contains(r.Header.Get("Authorization"), "/secretsmanager/aws4_request") {
		f.t.Errorf("%s: not SigV4-signed for secretsmanager", op)
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		SecretID           string `json:"SecretId"`
		VersionStage       string `json:"VersionStage"`
		SecretString       string `json:"SecretString"`
		ClientRequestToken string `json:"ClientRequestToken"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("%s: body %q: %v", op, raw, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if op == f.deny {
		smError(w, "AccessDeniedException", "User is not authorized to perform: secretsmanager:"+op)
		return
	}
	versions, exists := f.secrets[body.SecretID]
	if !exists {
		smError(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	switch op {
	case "GetSecretValue":
		stage := body.VersionStage
		if stage == "" {
			stage = "AWSCURRENT"
		}
		for _, v := range versions {
			for _, s := range v.stages {
				if s == stage {
					smJSON(w, map[string]any{"Name": body.SecretID, "VersionId": v.id, "VersionStages": v.stages, "SecretString": v.value})
					return
				}
			}
		}
		smError(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: "+stage)
	case "PutSecretValue":
		if len(body.ClientRequestToken) < 32 {
			smError(w, "ValidationException", "ClientRequestToken must be 32 to 64 characters")
			return
		}
		f.versions++
		v := &smVersion{id: fmt.Sprintf("v%04d-0000-4000-8000-000000000000", f.versions), value: body.SecretString,
			token: body.ClientRequestToken, stages: []string{"AWSCURRENT"}}
		for _, old := range versions {
			var keep []string
			for _, s := range old.stages {
				if s == "AWSCURRENT" {
					keep = append(keep, "AWSPREVIOUS")
				}
			}
			old.stages = keep
		}
		f.secrets[body.SecretID] = append(versions, v)
		smJSON(w, map[string]any{"Name": body.SecretID, "VersionId": v.id, "VersionStages": v.stages})
	default:
		f.t.Errorf("unexpected Secrets Manager call %s", op)
		smError(w, "UnknownOperationException", op)
	}
}

func smJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func smError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

// useSecretsManager points the resolved context's AWS configuration at srv
// (static test credentials, one attempt per request), so the commands build
// their real Secrets Manager client from it.
func useSecretsManager(c *cli, srv *httptest.Server) {
	cfg := aws.Config{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDCHAOSCLITEST", "not-a-real-secret-key", ""),
		HTTPClient:   srv.Client(),
		Retryer:      func() aws.Retryer { return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 1 }) },
	}
	c.hook = func(f *cmdutil.Factory) {
		resolve := f.Env
		f.Env = func(ctx context.Context) (*cmdutil.Env, error) {
			env, err := resolve(ctx)
			if err != nil {
				return nil, err
			}
			env.AWSConfig = func(context.Context) (aws.Config, error) { return cfg, nil }
			return env, nil
		}
	}
}

const smConfig = `current-context: aws-dev
contexts:
  aws-dev:
    store:
      local: {}
    chaos:
      secret-id: kosha/chaos/dev
`

type keyIDs struct {
	KeySource string `json:"key_source"`
	KeyOrigin string `json:"key_origin"`
	Keys      []struct {
		Stage     string `json:"stage"`
		KID       string `json:"kid"`
		VersionID string `json:"version_id"`
	} `json:"keys"`
}

func TestSecretsManagerRotationKeepsHeadersInFlight(t *testing.T) {
	c := newCLI(t)
	c.WriteConfig(smConfig)
	fake, srv := newFakeSM(t, "kosha/chaos/dev")
	useSecretsManager(c, srv)

	// An empty secret: nothing to sign with yet, and the error says how to fix it.
	r := c.must(cmdutil.ExitNotFound, "chaos", "sign", "--target", "openai", "--fault", "error")
	oneErrorLine(t, r, `"kosha/chaos/dev"`, "koshactl chaos key rotate")
	r = c.must(0, "chaos", "key", "rotate", "--dry-run")
	if !strings.Contains(r.Stdout, "Would store the first chaos key in Secrets Manager secret \"kosha/chaos/dev\"") || fake.count("PutSecretValue") != 0 {
		t.Fatalf("dry run on an empty secret:\n%s", r.Stdout)
	}

	c.must(0, "chaos", "key", "rotate")
	ids := decode[keyIDs](t, c.must(0, "chaos", "key", "id", "-o", "json").Stdout)
	if len(ids.Keys) != 1 || ids.Keys[0].Stage != "AWSCURRENT" || ids.Keys[0].VersionID != "v0001-0000-4000-8000-000000000000" ||
		ids.KeyOrigin != "chaos.secret-id" || ids.KeySource != `Secrets Manager secret "kosha/chaos/dev"` {
		t.Fatalf("key id after the first rotation = %+v", ids)
	}
	kid1 := ids.Keys[0].KID
	r = c.must(0, "chaos", "sign", "--target", "core-api", "--fault", "latency", "--ms", "100", "-o", "value")
	h1 := strings.TrimSpace(r.Stdout)
	if !strings.Contains(h1, ";kid="+kid1+";") || !strings.Contains(r.Stderr, `from Secrets Manager secret "kosha/chaos/dev" (context "aws-dev")`) {
		t.Fatalf("sign with AWSCURRENT: %s\n%s", h1, r.Stderr)
	}

	// Rotate: h1's key is now AWSPREVIOUS, and h1 still verifies by kid.
	c.Clock.Advance(time.Minute)
	c.must(0, "chaos", "key", "rotate")
	table := c.must(0, "chaos", "key", "id").Stdout
	if !strings.Contains(table, "AWSPREVIOUS  "+kid1+"  v0001-") || !strings.Contains(table, "AWSCURRENT ") {
		t.Fatalf("key id after the second rotation:\n%s", table)
	}
	rep := decode[verifyReport](t, c.must(0, "chaos", "verify", h1, "-o", "json").Stdout)
	if !rep.OK || rep.outcome("kid") != "pass" || rep.outcome("signature") != "pass" {
		t.Fatalf("a header signed with AWSPREVIOUS: %+v", rep)
	}
	h2 := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)
	if strings.Contains(h2, ";kid="+kid1+";") {
		t.Fatal("signed with AWSPREVIOUS after a rotation")
	}

	// A third rotation retires kid1: h1 fails the kid check, h2 still passes.
	c.Clock.Advance(time.Minute)
	rot := decode[struct {
		RetiredKID string   `json:"retired_kid"`
		After      kidState `json:"after"`
	}](t, c.must(0, "chaos", "key", "rotate", "-o", "json").Stdout)
	if rot.RetiredKID != kid1 || rot.After.VersionID != "v0003-0000-4000-8000-000000000000" {
		t.Errorf("third rotation = %+v", rot)
	}
	r = c.must(cmdutil.ExitError, "chaos", "verify", h1)
	oneErrorLine(t, r, "rejected by the kid check", kid1, "AWSPREVIOUS kid")
	c.must(0, "chaos", "verify", h2)
	c.Clock.Advance(5 * time.Minute) // h2 was minted 1m ago with the default 5m ttl
	c.must(cmdutil.ExitError, "chaos", "verify", h2)

	recs := auditRecords(t, c, "chaos.key-rotate")
	if len(recs) != 3 || recs[0].Subject != "chaos-key#kosha/chaos/dev" || len(recs[2].Before) != 0 {
		t.Fatalf("rotation audit = %+v", recs)
	}
	after := decode[kidState](t, string(recs[0].After))
	if after.PreviousKID == "" || after.CurrentKID == "" || after.VersionID == "" {
		t.Errorf("rotation audit after = %s", recs[0].After)
	}
	if n := len(auditRecords(t, c, "chaos.sign")); n != 2 {
		t.Errorf("%d mints audited, want 2", n)
	}
	vals := fake.values()
	if len(vals) != 3 {
		t.Fatalf("%d versions stored, want 3", len(vals))
	}
	for _, v := range vals {
		assertNoKey(t, c, v)
	}
}

func TestSecretsManagerAccessDenied(t *testing.T) {
	c := newCLI(t)
	c.WriteConfig(smConfig)
	fake, srv := newFakeSM(t, "kosha/chaos/dev")
	useSecretsManager(c, srv)
	c.must(0, "chaos", "key", "rotate")
	h := strings.TrimSpace(c.must(0, "chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value").Stdout)

	fake.setDeny("GetSecretValue")
	r := c.must(cmdutil.ExitAuth, "chaos", "sign", "--target", "openai", "--fault", "error")
	oneErrorLine(t, r, "access denied", "secretsmanager:GetSecretValue")
	// Verify cannot decide: the table says so, and the exit is the key store's.
	r = c.must(cmdutil.ExitAuth, "chaos", "verify", h)
	if !strings.Contains(r.Stdout, "kid        ERROR") || !strings.Contains(r.Stdout, "UNDECIDED") {
		t.Errorf("verify with a denied key store:\n%s", r.Stdout)
	}
	oneErrorLine(t, r, "access denied")
	c.must(cmdutil.ExitAuth, "chaos", "key", "id")

	fake.setDeny("PutSecretValue")
	r = c.must(cmdutil.ExitAuth, "chaos", "key", "rotate")
	oneErrorLine(t, r, "secretsmanager:PutSecretValue")
	if n := len(auditRecords(t, c, "chaos.key-rotate")); n != 1 {
		t.Errorf("%d rotations audited, want only the one that happened", n)
	}
	if n := len(auditRecords(t, c, "chaos.sign")); n != 1 {
		t.Errorf("%d mints audited, want 1", n)
	}
	for _, v := range fake.values() {
		assertNoKey(t, c, v)
	}
}

func TestSecretsManagerMissingSecret(t *testing.T) {
	c := newCLI(t)
	c.WriteConfig(smConfig)
	_, srv := newFakeSM(t) // no secret at all
	useSecretsManager(c, srv)
	r := c.must(cmdutil.ExitNotFound, "chaos", "key", "rotate")
	oneErrorLine(t, r, "aws secretsmanager create-secret --name kosha/chaos/dev")
	if n := len(auditRecords(t, c, "")); n != 0 {
		t.Errorf("a failed rotation was audited")
	}
}
