package base

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

func TestEndpointServicesAgree(t *testing.T) {
	if got := slices.Sorted(maps.Keys(awsconf.Services)); !slices.Equal(got, config.EndpointServices) {
		t.Errorf("awsconf knows services %v, config %v: a context could name one the other refuses", got, config.EndpointServices)
	}
}

func TestEndpointContextsMayBeUnverified(t *testing.T) {
	isolateAWS(t)
	for _, tc := range []struct {
		name       string
		opts       awsconf.Options
		store      string // the store's endpoint as the DynamoDB client resolves it
		wantAllow  bool
		wantTarget string // where STS is asked
	}{
		{"aws", awsconf.Options{Region: "eu-west-1"}, "", false, ""},
		{"one for all", awsconf.Options{Region: "eu-west-1", EndpointURL: "http://127.0.0.1:8000"}, "http://127.0.0.1:8000", true, "http://127.0.0.1:8000"},
		{"sts elsewhere", awsconf.Options{Region: "eu-west-1", EndpointURL: "http://127.0.0.1:8000",
			Endpoints: map[string]string{"sts": "http://127.0.0.1:4566"}}, "http://127.0.0.1:8000", true, "http://127.0.0.1:4566"},
		{"vpc endpoint to AWS", awsconf.Options{Region: "eu-west-1", EndpointURL: "https://vpce-1.dynamodb.eu-west-1.vpce.amazonaws.com"},
			"https://vpce-1.dynamodb.eu-west-1.vpce.amazonaws.com", false, "https://vpce-1.dynamodb.eu-west-1.vpce.amazonaws.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := awsconf.Load(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			r := identityResolver("dev", cfg, tc.store)
			if r.AllowUnverified != tc.wantAllow || r.Endpoint != tc.wantTarget || r.Region != "eu-west-1" || r.Context != "dev" {
				t.Errorf("resolver allows unverified %v at %q, want %v at %q", r.AllowUnverified, r.Endpoint, tc.wantAllow, tc.wantTarget)
			}
		})
	}
}

// isolateAWS gives the test environment credentials and nothing else.
func isolateAWS(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", home+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", home+"/credentials")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_STS", "")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
}

// With WithEnviron the factory reads no variable of the process: the config
// file, the state directory, the context and the asserted actor all come
// from the environment it was given, whatever the process says.
func TestWithEnvironIsTheOnlyEnvironmentRead(t *testing.T) {
	proc := t.TempDir()
	t.Setenv("KOSHACTL_CONFIG", filepath.Join(proc, "config.yaml"))
	t.Setenv("KOSHACTL_STATE_DIR", filepath.Join(proc, "state"))
	t.Setenv("KOSHACTL_CONTEXT", "from-process")
	t.Setenv("KOSHACTL_ACTOR", "process@test")

	dir := t.TempDir()
	given := []string{"KOSHACTL_CONFIG=" + filepath.Join(dir, "config.yaml"), "KOSHACTL_STATE_DIR=" + filepath.Join(dir, "state"),
		"KOSHACTL_CONTEXT=", "KOSHACTL_CONTEXT=dev", "KOSHACTL_ACTOR=given@test"}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("contexts:\n  dev:\n    store:\n      local: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	f := NewWith(ios, clocktest.NewFake(time.Unix(0, 0)), WithEnviron(func() []string { return given }),
		WithLocalStore(func(ctx context.Context, path string) (store.Store, error) { return sqlite.Open(ctx, path) }))
	if f.ContextName != "dev" {
		t.Errorf("ContextName = %q, want dev (the last KOSHACTL_CONTEXT given)", f.ContextName)
	}
	file, err := f.Config()
	if err != nil || file.Path() != filepath.Join(dir, "config.yaml") {
		t.Fatalf("config %v, %v; want the given file", file, err)
	}
	env, err := f.Env(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Store.Close() }()
	if env.Name != "dev" || env.StateDir != filepath.Join(dir, "state") {
		t.Errorf("env %q in %s, want dev in the given state dir", env.Name, env.StateDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "local.db")); err != nil {
		t.Errorf("the embedded store is not in the given state dir: %v", err)
	}
	if actor, err := env.Actor(t.Context()); err != nil || actor != "given@test" {
		t.Errorf("actor %q, %v; want given@test", actor, err)
	}
	if v, ok := env.Environ.Lookup("KOSHACTL_ACTOR"); !ok || v != "given@test" {
		t.Errorf("env.Environ KOSHACTL_ACTOR = %q, %v", v, ok)
	}
	if _, err := os.Stat(filepath.Join(proc, "state")); !os.IsNotExist(err) {
		t.Errorf("the process's state dir was touched: %v", err)
	}
}

// A program without the embedded store (koshactl's front) refuses a local
// context's store with the error naming the program that opens it, and
// writes no file.
func TestALocalContextWithoutTheEmbeddedStore(t *testing.T) {
	dir := t.TempDir()
	ios, _, _, _ := iostreams.Test()
	f := NewWith(ios, clocktest.NewFake(time.Unix(0, 0)), WithEnviron(func() []string {
		return []string{"KOSHACTL_CONFIG=" + filepath.Join(dir, "config.yaml"), "KOSHACTL_STATE_DIR=" + filepath.Join(dir, "state")}
	}))
	if _, err := f.Env(t.Context()); !errors.Is(err, ErrLocalStore) {
		t.Errorf("Env on the local context: %v, want ErrLocalStore", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
		t.Errorf("the state dir was made: %v", err)
	}
}

// Issue 45: a slow endpoint failed every large transaction after 10 s, with
// no way to allow more. The AWS clients' bound on one request is the global
// --request-timeout, else the context's request-timeout, else 10 s, on a
// DynamoDB context and on the local one's AWS clients alike.
func TestRequestTimeoutReachesTheAWSClients(t *testing.T) {
	dir := t.TempDir()
	cfg := "contexts:\n" +
		"  dev:\n    store:\n      dynamodb: {table: t, region: us-east-1, endpoint-url: 'http://127.0.0.1:1', static-credentials: true}\n" +
		"    request-timeout: 45s\n" +
		"  plain:\n    store:\n      dynamodb: {table: t, region: us-east-1, endpoint-url: 'http://127.0.0.1:1', static-credentials: true}\n" +
		"  local:\n    store: {local: {}}\n    request-timeout: 2m\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The local context's AWS clients read the SDK's variables of the
	// process, as the SDK does.
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIATEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	for _, tc := range []struct {
		context string
		flag    time.Duration
		want    time.Duration
	}{
		{"plain", 0, awsconf.DefaultHTTPTimeout},
		{"dev", 0, 45 * time.Second},
		{"dev", 20 * time.Second, 20 * time.Second},
		{"local", 0, 2 * time.Minute},
		{"local", 5 * time.Second, 5 * time.Second},
	} {
		environ := []string{"KOSHACTL_CONFIG=" + filepath.Join(dir, "config.yaml"), "KOSHACTL_STATE_DIR=" + filepath.Join(dir, "state"),
			"KOSHACTL_CONTEXT=" + tc.context}
		ios, _, _, _ := iostreams.Test()
		// The embedded store as the full program opens it (this program
		// refuses a local context's store).
		f := NewWith(ios, clocktest.NewFake(time.Unix(0, 0)), WithEnviron(func() []string { return environ }),
			WithLocalStore(func(ctx context.Context, path string) (store.Store, error) { return sqlite.Open(ctx, path) }))
		f.RequestTimeout = tc.flag
		env, err := f.Env(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", tc.context, err)
		}
		aws, err := env.AWSConfig(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", tc.context, err)
		}
		hc, ok := aws.HTTPClient.(interface{ GetTimeout() time.Duration })
		if !ok || hc.GetTimeout() != tc.want {
			t.Errorf("%s with --request-timeout %s: the clients' timeout is %v, want %s", tc.context, tc.flag, hc, tc.want)
		}
		_ = env.Store.Close()
	}
}
