package keys_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

// newSMClient is the real SDK client pointed at srv, with static
// credentials and up to attempts tries without backoff delay.
func newSMClient(srv *smfake.Server, attempts int) *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDCHAOSTEST", "not-a-real-secret-key", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			o.RateLimiter = ratelimit.None
		}),
	})
}

const secretID = "kosha/chaos/dev" //nolint:gosec // G101: a secret's name, not its value

// force rotates whatever the current key's age: these tests are about
// other rules than the age guard.
var force = keys.RotateOptions{Force: true}

// newFakeSM starts the Secrets Manager fake on the real clock.
func newFakeSM(t *testing.T) (*smfake.Server, *smfake.Server) {
	f := smfake.New(t, nil)
	return f, f
}

func TestSecretsManagerRotationKeepsHeadersInFlight(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	fake.Create(secretID)
	src := keys.NewSecretsManager(newSMClient(srv, 3), secretID)

	// First rotation of an empty secret stores the first key.
	r1, err := src.Rotate(ctx, force)
	if err != nil {
		t.Fatalf("first rotate: %v", err)
	}
	if !r1.Previous.IsZero() || r1.Current.IsZero() || r1.VersionID == "" {
		t.Fatalf("first rotation %+v", r1)
	}
	put := fake.LastCall("PutSecretValue")
	if tok, _ := put.Body["ClientRequestToken"].(string); len(tok) < 32 {
		t.Errorf("ClientRequestToken %q, want 32+ characters", tok)
	}
	stored, _ := put.Body["SecretString"].(string)
	if raw, err := base64.StdEncoding.DecodeString(stored); err != nil || len(raw) != 32 {
		t.Errorf("stored SecretString is not standard base64 of 32 bytes (%d bytes, %v)", len(raw), err)
	}
	if put.Body["SecretId"] != secretID {
		t.Errorf("put to %v", put.Body["SecretId"])
	}

	// Mint with the current key through the real client.
	clk := clocktest.NewFake(time.Unix(1767225600, 0))
	minter, err := chaos.NewMinter(src, chaos.MinterOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	m1, err := minter.Mint(ctx, chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError})
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	if m1.Header.KID != r1.Current.KID() {
		t.Errorf("minted under kid %s, current is %s", m1.Header.KID, r1.Current.KID())
	}
	get := fake.LastCall("GetSecretValue")
	if get.Body["SecretId"] != secretID || get.Body["VersionStage"] != "AWSCURRENT" {
		t.Errorf("GetSecretValue body %v", get.Body)
	}

	// Rotate: the header minted before still verifies (AWSPREVIOUS).
	r2, err := src.Rotate(ctx, force)
	if err != nil {
		t.Fatalf("second rotate: %v", err)
	}
	if !r2.Previous.Equal(r1.Current) || r2.Current.Equal(r1.Current) {
		t.Fatalf("second rotation: previous %s current %s", r2.Previous, r2.Current)
	}
	if st := fake.Stages(secretID); st["AWSCURRENT"] != r2.VersionID || st["AWSPREVIOUS"] != r1.VersionID {
		t.Fatalf("stages after rotation: %v", st)
	}
	ver, err := chaos.NewVerifier(src, chaos.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ver.Verify(ctx, m1.Value()); err != nil {
		t.Fatalf("header minted before the rotation: %v", err)
	}
	m2, err := minter.Mint(ctx, chaos.MintRequest{Target: chaos.TargetOpenAI, Fault: chaos.FaultReset})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Header.KID != r2.Current.KID() {
		t.Errorf("after rotation minted under %s, want %s", m2.Header.KID, r2.Current.KID())
	}
	gets := fake.Calls("GetSecretValue")
	if _, err := ver.Verify(ctx, m2.Value()); err != nil {
		t.Fatalf("header minted after the rotation: %v", err)
	}
	if n := fake.Calls("GetSecretValue") - gets; n != 1 {
		t.Errorf("verifying a current-key header read the secret %d times, want 1 (AWSCURRENT only)", n)
	}

	staged, err := src.Keys(ctx)
	if err != nil || len(staged) != 2 || staged[0].Stage != keys.StageCurrent || staged[1].Stage != keys.StagePrevious ||
		staged[0].VersionID != r2.VersionID || !staged[1].Key.Equal(r1.Current) {
		t.Fatalf("Keys = %+v, %v", staged, err)
	}

	// A third rotation retires the first key: its header is refused by kid.
	r3, err := src.Rotate(ctx, force)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ver.Verify(ctx, m1.Value())
	if !errors.Is(err, chaos.ErrUnknownKID) {
		t.Fatalf("header of a retired key: %v, want unknown kid", err)
	}
	for _, want := range []string{r1.Current.KID(), "AWSCURRENT kid " + r3.Current.KID(), "AWSPREVIOUS kid " + r2.Current.KID(), secretID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	got, err := src.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Key.Equal(r3.Current) || !got[1].Key.Equal(r2.Current) {
		t.Errorf("keys %v", got)
	}
}

func TestSecretsManagerNotFound(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	src := keys.NewSecretsManager(newSMClient(srv, 3), secretID)

	_, err := src.Current(ctx)
	if !errors.Is(err, keys.ErrNoKey) {
		t.Fatalf("missing secret: %v, want ErrNoKey", err)
	}
	for _, want := range []string{`"kosha/chaos/dev"`, "aws secretsmanager create-secret --name kosha/chaos/dev", "koshactl chaos key rotate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	_, err = src.Rotate(ctx, force)
	if !errors.Is(err, keys.ErrNoKey) || !strings.Contains(err.Error(), "create-secret --name kosha/chaos/dev") {
		t.Errorf("rotating a missing secret: %v", err)
	}
	if n := fake.Calls("GetSecretValue"); n != 2 {
		t.Errorf("not-found was retried: %d GetSecretValue calls, want 2 (one per operation)", n)
	}

	// A secret created without a value has no AWSCURRENT yet.
	fake.Create(secretID)
	if _, err := src.Current(ctx); !errors.Is(err, keys.ErrNoKey) || !strings.Contains(err.Error(), "no AWSCURRENT version") {
		t.Errorf("secret without a value: %v", err)
	}
	// With only AWSCURRENT, verification of an unknown kid names what exists.
	if _, err := src.Rotate(ctx, force); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ByKID(ctx, "AAAAAAAAAAA"); !errors.Is(err, chaos.ErrUnknownKID) {
		t.Errorf("unknown kid with no AWSPREVIOUS: %v", err)
	}
}

func TestSecretsManagerAccessDenied(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	fake.Create(secretID)
	src := keys.NewSecretsManager(newSMClient(srv, 3), secretID)

	fake.Fail("GetSecretValue", 400, "AccessDeniedException", -1)
	_, err := src.Current(ctx)
	var se *keys.SecretError
	if !errors.Is(err, keys.ErrAccessDenied) || !errors.As(err, &se) || se.SecretID != secretID {
		t.Fatalf("denied read: %v", err)
	}
	if !strings.Contains(err.Error(), "secretsmanager:GetSecretValue") || !strings.Contains(err.Error(), "AccessDeniedException") {
		t.Errorf("error %q does not name the permission and code", err)
	}
	if n := fake.Calls("GetSecretValue"); n != 1 {
		t.Errorf("access denied was retried: %d calls", n)
	}
	// Verification cannot decide: it is a keyring error, not a verdict.
	ver, _ := chaos.NewVerifier(src, chaos.Options{})
	k, _ := chaos.GenerateKey(nil)
	value, _ := chaostest.Sign(k, chaos.Fields{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError, P: chaos.ProbOne, Exp: time.Now().Add(time.Minute).Unix(), JTI: "abcdefghijklmnopq"})
	r := ver.Explain(ctx, value)
	if r.OK || !errors.Is(r.Err(), keys.ErrAccessDenied) || chaostest.Result(r, chaos.CheckKID).Outcome != chaos.OutcomeError {
		t.Errorf("explain with a denied keyring: %v %+v", r.Err(), chaostest.Result(r, chaos.CheckKID))
	}
}

func TestSecretsManagerRotateDenied(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	fake.Create(secretID)
	fake.Fail("PutSecretValue", 400, "AccessDeniedException", -1)
	src := keys.NewSecretsManager(newSMClient(srv, 3), secretID)
	_, err := src.Rotate(ctx, force)
	if !errors.Is(err, keys.ErrAccessDenied) || !strings.Contains(err.Error(), "secretsmanager:PutSecretValue") || !strings.Contains(err.Error(), "rotate chaos key secret") {
		t.Fatalf("denied rotate: %v", err)
	}
	if len(fake.Stages(secretID)) != 0 {
		t.Error("a denied rotation stored a version")
	}
}

func TestSecretsManagerThrottling(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	fake.Create(secretID)
	src := keys.NewSecretsManager(newSMClient(srv, 3), secretID)
	if _, err := src.Rotate(ctx, force); err != nil {
		t.Fatal(err)
	}
	before := fake.Calls("GetSecretValue")

	// Throttled twice, then served: the SDK's retries absorb it.
	fake.Fail("GetSecretValue", 400, "ThrottlingException", 2)
	if _, err := src.Current(ctx); err != nil {
		t.Fatalf("throttled twice with 3 attempts: %v", err)
	}
	if n := fake.Calls("GetSecretValue") - before; n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}

	// Throttled throughout: a classified error after exactly 3 attempts.
	fake.Fail("GetSecretValue", 400, "ThrottlingException", -1)
	before = fake.Calls("GetSecretValue")
	_, err := src.Current(ctx)
	if !errors.Is(err, keys.ErrThrottled) || !strings.Contains(err.Error(), "try again shortly") {
		t.Fatalf("throttled: %v", err)
	}
	if n := fake.Calls("GetSecretValue") - before; n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func TestSecretsManagerCredentialsRejected(t *testing.T) {
	fake, srv := newFakeSM(t)
	fake.Create(secretID)
	fake.Fail("", 400, "UnrecognizedClientException", -1)
	_, err := keys.NewSecretsManager(newSMClient(srv, 3), secretID).Current(context.Background())
	if !errors.Is(err, keys.ErrCredentials) {
		t.Fatalf("rejected credentials: %v", err)
	}
}

func TestSecretsManagerBadSecretValue(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	const junk = `{"key":"hunter2-this-is-not-a-key"}`
	fake.PutRaw(secretID, junk, false)
	src := keys.NewSecretsManager(newSMClient(srv, 3), secretID)
	_, err := src.Current(ctx)
	if !errors.Is(err, chaos.ErrInvalidKey) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("junk value: %v", err)
	}
	if !strings.Contains(err.Error(), "AWSCURRENT") || !strings.Contains(err.Error(), "version v0001") {
		t.Errorf("error %q does not say which version is bad", err)
	}
	// Rotation repairs it, and the junk becomes AWSPREVIOUS...
	r, err := src.Rotate(ctx, force)
	if err != nil || !r.Previous.IsZero() {
		t.Fatalf("rotating over junk: %+v, %v", r, err)
	}
	// ...which breaks Keys (it is reported), but not verification of
	// current-key headers, which never reads AWSPREVIOUS.
	if _, err := src.Keys(ctx); !errors.Is(err, chaos.ErrInvalidKey) {
		t.Errorf("Keys with a junk AWSPREVIOUS: %v", err)
	}
	if _, err := src.ByKID(ctx, r.Current.KID()); err != nil {
		t.Errorf("ByKID current with a junk AWSPREVIOUS: %v", err)
	}

	fake2, srv2 := newFakeSM(t)
	fake2.PutRaw(secretID, "binary-bytes", true)
	_, err = keys.NewSecretsManager(newSMClient(srv2, 1), secretID).Current(ctx)
	if !errors.Is(err, chaos.ErrInvalidKey) || !strings.Contains(err.Error(), "SecretBinary") {
		t.Errorf("binary secret: %v", err)
	}
}

func TestSecretsManagerErrorsNeverCarryTheKey(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	fake.Create(secretID)
	src := keys.NewSecretsManager(newSMClient(srv, 1), secretID)
	r, err := src.Rotate(ctx, force)
	if err != nil {
		t.Fatal(err)
	}
	secret := r.Current.ExportBase64()
	var msgs []string
	_, err = src.ByKID(ctx, "AAAAAAAAAAA")
	msgs = append(msgs, err.Error(), fmt.Sprintf("%+v %v", r, r))
	staged, _ := src.Keys(ctx)
	msgs = append(msgs, fmt.Sprintf("%+v %#v", staged, staged))
	for _, m := range msgs {
		if strings.Contains(m, secret) || strings.Contains(m, secret[:16]) {
			t.Errorf("key material in %q", m)
		}
	}
	if src.Describe() != `Secrets Manager secret "kosha/chaos/dev"` {
		t.Errorf("describe %q", src.Describe())
	}
}

func TestSecretsManagerUnreachableOrFailing(t *testing.T) {
	ctx := context.Background()
	fake, srv := newFakeSM(t)
	fake.Create(secretID)
	src := keys.NewSecretsManager(newSMClient(srv, 1), secretID)
	fake.Fail("GetSecretValue", 500, "InternalServiceError", -1)
	if _, err := src.Current(ctx); !errors.Is(err, keys.ErrUnavailable) || errors.Is(err, keys.ErrAccessDenied) {
		t.Errorf("server error: %v", err)
	}
	srv.Close()
	_, err := src.Current(ctx)
	if !errors.Is(err, keys.ErrUnavailable) || !strings.Contains(err.Error(), "could not be reached") {
		t.Errorf("closed server: %v", err)
	}
}
