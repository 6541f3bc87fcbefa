package breaker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// environmentCredentials gives the test what a new user has: ordinary
// credentials in the environment (not --static-credentials), no profile, no
// shared files and no endpoint variables.
func environmentCredentials(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
}

type auditItem struct {
	Actor       string            `json:"actor"`
	ActorSource audit.ActorSource `json:"actor_source"`
	Action      string            `json:"action"`
}

// The done-when check: a new user on an endpoint that serves no STS
// (DynamoDB Local, dynalite: they answer GetCallerIdentity with a 404
// UnknownOperationException) with environment credentials can init the store
// and force a breaker at once, and the audit record says the actor is
// unverified.
func TestEnvironmentCredentialsOnAnEndpointWithoutSTS(t *testing.T) {
	endpoint := moto.Start(t)
	environmentCredentials(t)
	var calls atomic.Int64
	noSTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<UnknownOperationException/>"))
	}))
	t.Cleanup(noSTS.Close)
	e := clitest.New(t)
	e.MustRun(0, "config", "set-context", "dev", "--table", "kosha-control", "--region", moto.Region,
		"--endpoint-url", endpoint, "--service-endpoint", "sts="+noSTS.URL, "--use")
	e.MustRun(0, "store", "init")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")

	recs := clitest.Decode[struct {
		Items []auditItem `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "-o", "json").Stdout)
	if len(recs.Items) != 1 || recs.Items[0].Actor != "tester@test" || recs.Items[0].ActorSource != audit.ActorUnverified {
		t.Fatalf("audit records %+v, want one by tester@test marked unverified", recs.Items)
	}
	if calls.Load() == 0 {
		t.Error("the context's sts endpoint was never asked")
	}
	if r := e.MustRun(0, "audit", "list"); !strings.Contains(r.Stdout, "tester@test (unverified)") {
		t.Errorf("audit list table should mark the actor unverified:\n%s", r.Stdout)
	}
	// The stored item carries the contract's attribute.
	if got := storedActorSources(t, endpoint); got != "unverified" {
		t.Errorf("stored audit items' actor_source = %q, want one unverified", got)
	}
}

// The same new user on moto, which serves STS at the same endpoint as
// DynamoDB (as LocalStack does): the record names the caller STS returns,
// verified.
func TestEnvironmentCredentialsOnMoto(t *testing.T) {
	endpoint := moto.Start(t)
	environmentCredentials(t)
	e := clitest.New(t)
	e.MustRun(0, "config", "set-context", "dev", "--table", "kosha-control", "--region", moto.Region,
		"--endpoint-url", endpoint, "--use")
	e.MustRun(0, "store", "init")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	recs := clitest.Decode[struct {
		Items []auditItem `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "-o", "json").Stdout)
	if len(recs.Items) != 1 || !strings.HasPrefix(recs.Items[0].Actor, "arn:aws:") || recs.Items[0].ActorSource != audit.ActorSTS {
		t.Fatalf("audit records %+v, want one by the caller's ARN verified by STS", recs.Items)
	}
	if got := storedActorSources(t, endpoint); got != "sts" {
		t.Errorf("stored audit items' actor_source = %q, want one sts", got)
	}
}

// storedActorSources returns the actor_source of every audit item stored in
// the kosha-control table at endpoint, comma-separated.
func storedActorSources(t *testing.T, endpoint string) string {
	t.Helper()
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
	var sources []string
	for it, err := range s.Scan(context.Background(), store.ScanQuery{Prefix: audit.Prefix}) {
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, it.Str("actor_source"))
	}
	return strings.Join(sources, ",")
}

// An endpoint context whose STS answers (LocalStack-style) records the
// caller ARN, verified.
func TestSTSAtTheEndpointVerifiesTheActor(t *testing.T) {
	endpoint := moto.Start(t)
	environmentCredentials(t)
	const arn = "arn:aws:iam::000000000000:root"
	var calls atomic.Int64
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(`<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>` + arn +
			`</Arn><UserId>AKIA</UserId><Account>000000000000</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`))
	}))
	t.Cleanup(sts.Close)
	e := clitest.New(t)
	e.MustRun(0, "config", "set-context", "ls", "--table", "kosha-control", "--region", moto.Region,
		"--endpoint-url", endpoint, "--service-endpoint", "sts="+sts.URL, "--use")
	e.MustRun(0, "store", "init")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "drill")
	recs := clitest.Decode[struct {
		Items []auditItem `json:"items"`
	}](t, e.MustRun(0, "audit", "list", "-o", "json").Stdout)
	if len(recs.Items) != 1 || recs.Items[0].Actor != arn || recs.Items[0].ActorSource != audit.ActorSTS {
		t.Fatalf("audit records %+v, want one by %s verified by STS", recs.Items, arn)
	}
	if calls.Load() == 0 {
		t.Error("STS at the context's sts endpoint was never asked")
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(e.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout), &raw); err != nil || raw["actor"] != arn {
		t.Errorf("override actor = %v (%v), want the caller ARN", raw["actor"], err)
	}
}
