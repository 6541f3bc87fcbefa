package awsconf

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kosha-platform/koshactl/internal/store"
)

// isolate points every AWS source the SDK reads at an empty temporary home,
// so the tests see neither the developer's credentials nor a metadata
// service, and returns that home.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCOUNT_ID",
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
		"AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
	} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	return home
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeIMDS serves an instance role the way EC2's metadata service does and
// counts the requests it gets.
func fakeIMDS(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = w.Write([]byte("imds-token"))
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
			_, _ = w.Write([]byte("kosha-role"))
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/kosha-role":
			_ = json.NewEncoder(w).Encode(map[string]string{
				"Code":            "Success",
				"LastUpdated":     time.Now().UTC().Format(time.RFC3339),
				"Type":            "AWS-HMAC",
				"AccessKeyId":     "ASIAIMDSROLE",
				"SecretAccessKey": "imds-secret",
				"Token":           "imds-session",
				"Expiration":      time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestNoCredentialsFailsWithoutProbingIMDS(t *testing.T) {
	isolate(t)
	srv, hits := fakeIMDS(t)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)

	_, err := Load(context.Background(), Options{Region: "eu-west-1"})
	if !errors.Is(err, store.ErrCredentials) {
		t.Fatalf("Load without credentials: err = %v, want ErrCredentials", err)
	}
	var ce *CredentialsError
	if !errors.As(err, &ce) {
		t.Fatalf("err is %T, want *CredentialsError", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("instance metadata service got %d requests with IMDS off", n)
	}
	msg := err.Error()
	for _, want := range []string{"environment variables", "shared config", "AWS_PROFILE", "aws sso login", "imds: true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
}

func TestIMDSUsedWhenContextAsks(t *testing.T) {
	isolate(t)
	srv, hits := fakeIMDS(t)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)

	cfg, err := Load(context.Background(), Options{Region: "eu-west-1", IMDS: true})
	if err != nil {
		t.Fatalf("Load with IMDS: %v", err)
	}
	if hits.Load() == 0 {
		t.Fatal("instance metadata service was never asked")
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessKeyID != "ASIAIMDSROLE" {
		t.Errorf("access key = %q, want the instance role's", creds.AccessKeyID)
	}
}

func TestIMDSErrorMentionsIt(t *testing.T) {
	isolate(t)
	srv := httptest.NewServer(http.NotFoundHandler()) // metadata service without a role
	t.Cleanup(srv.Close)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)

	_, err := Load(context.Background(), Options{Region: "eu-west-1", IMDS: true, MaxAttempts: 1})
	if !errors.Is(err, store.ErrCredentials) {
		t.Fatalf("err = %v, want ErrCredentials", err)
	}
	if !strings.Contains(err.Error(), "and the EC2 instance metadata service") {
		t.Errorf("error does not list IMDS among the sources tried: %v", err)
	}
}

func TestEnvironmentCredentials(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	cfg, err := Load(context.Background(), Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessKeyID != "AKIAENV" {
		t.Errorf("access key = %q", creds.AccessKeyID)
	}
	if cfg.Region != "us-east-1" {
		t.Errorf("region = %q", cfg.Region)
	}
}

func TestProfileFromSharedFiles(t *testing.T) {
	home := isolate(t)
	writeFile(t, filepath.Join(home, "credentials"), "[ops]\naws_access_key_id = AKIAOPS\naws_secret_access_key = ops-secret\n")
	writeFile(t, filepath.Join(home, "config"), "[profile ops]\nregion = ap-south-1\n")

	cfg, err := Load(context.Background(), Options{Profile: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "ap-south-1" {
		t.Errorf("region = %q, want the profile's ap-south-1", cfg.Region)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessKeyID != "AKIAOPS" {
		t.Errorf("access key = %q", creds.AccessKeyID)
	}
}

func TestMissingProfile(t *testing.T) {
	isolate(t)
	_, err := Load(context.Background(), Options{Region: "us-east-1", Profile: "nosuch"})
	if !errors.Is(err, store.ErrCredentials) {
		t.Fatalf("err = %v, want ErrCredentials", err)
	}
	if !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), "AWS_PROFILE") {
		t.Errorf("error should name the profile and how to fix it: %v", err)
	}
}

func TestExpiredSSOSessionSaysLogin(t *testing.T) {
	home := isolate(t)
	writeFile(t, filepath.Join(home, "config"), `[profile sso-dev]
sso_start_url = https://example.awsapps.com/start
sso_region = us-east-1
sso_account_id = 123456789012
sso_role_name = Operator
region = us-east-1
`)
	_, err := Load(context.Background(), Options{Profile: "sso-dev"})
	if !errors.Is(err, store.ErrCredentials) {
		t.Fatalf("err = %v, want ErrCredentials", err)
	}
	if !strings.Contains(err.Error(), "aws sso login --profile sso-dev") {
		t.Errorf("error should say how to log in: %v", err)
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	home := isolate(t)
	// A profile that has a secret but assumes a role through an unreachable
	// STS: the failure must not echo the secret.
	writeFile(t, filepath.Join(home, "credentials"), "[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = very-secret-value\n")
	writeFile(t, filepath.Join(home, "config"), "[profile role]\nrole_arn = arn:aws:iam::123456789012:role/x\nsource_profile = base\nregion = us-east-1\n")
	t.Setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1")
	_, err := Load(context.Background(), Options{Profile: "role", MaxAttempts: 1})
	if err == nil {
		t.Fatal("Load succeeded through an unreachable STS")
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("unreachable STS: err = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "very-secret-value") {
		t.Errorf("error leaks the secret: %v", err)
	}
}

func TestNoRegion(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	_, err := Load(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "region") {
		t.Fatalf("Load without region: err = %v, want one about the region", err)
	}
}

func TestStaticCredentials(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		wantErr  string
	}{
		{"loopback", "http://127.0.0.1:8000", ""},
		{"compose host", "http://localstack:4566", ""},
		{"no endpoint", "", "need an endpoint"},
		{"real aws", "https://dynamodb.us-east-1.amazonaws.com", "AWS endpoint"},
		{"real aws china", "https://dynamodb.cn-north-1.amazonaws.com.cn", "AWS endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			cfg, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: tc.endpoint, StaticCredentials: true})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if creds.AccessKeyID != StaticAccessKeyID {
				t.Errorf("access key = %q", creds.AccessKeyID)
			}
			if aws.ToString(cfg.BaseEndpoint) != tc.endpoint {
				t.Errorf("endpoint = %q", aws.ToString(cfg.BaseEndpoint))
			}
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	isolate(t)
	for name, o := range map[string]Options{
		"bad endpoint":     {Region: "us-east-1", EndpointURL: "localhost:8000"},
		"ftp endpoint":     {Region: "us-east-1", EndpointURL: "ftp://x"},
		"negative timeout": {Region: "us-east-1", HTTPTimeout: -time.Second},
		"negative retries": {Region: "us-east-1", MaxAttempts: -1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Load(context.Background(), o); err == nil {
				t.Errorf("Load(%+v) succeeded", o)
			}
		})
	}
}

// dynamoServer answers every request with status after counting it.
func dynamoServer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestMaxAttemptsBoundsRetries(t *testing.T) {
	isolate(t)
	for _, attempts := range []int{1, 2} {
		var hits atomic.Int64
		url := dynamoServer(t, func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"boom"}`))
		})
		cfg, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: url, StaticCredentials: true, MaxAttempts: attempts})
		if err != nil {
			t.Fatal(err)
		}
		_, err = dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{})
		if err == nil {
			t.Fatal("ListTables against a failing server succeeded")
		}
		if got := hits.Load(); got != int64(attempts) {
			t.Errorf("MaxAttempts %d: server saw %d requests", attempts, got)
		}
	}
}

func TestDefaultRetriesAreBounded(t *testing.T) {
	isolate(t)
	var hits atomic.Int64
	url := dynamoServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	cfg, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: url, StaticCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if got := hits.Load(); got != DefaultMaxAttempts {
		t.Errorf("server saw %d requests, want the default %d", got, DefaultMaxAttempts)
	}
}

func TestHTTPTimeoutEndsAHungRequest(t *testing.T) {
	isolate(t)
	release := make(chan struct{})
	url := dynamoServer(t, func(w http.ResponseWriter, r *http.Request) {
		select { // hang until the client gives up or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	cfg, err := Load(context.Background(), Options{
		Region: "us-east-1", EndpointURL: url, StaticCredentials: true,
		HTTPTimeout: 50 * time.Millisecond, MaxAttempts: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The caller's context has no deadline: only HTTPTimeout can end this.
	_, err = dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err == nil {
		t.Fatal("request to a hung server succeeded")
	}
	if !strings.Contains(err.Error(), "Client.Timeout") && !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("err = %v, want an HTTP client timeout", err)
	}
}
