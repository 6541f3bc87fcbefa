package factory

import (
	"context"
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/config"
)

func TestEndpointServicesAgree(t *testing.T) {
	if got := awsconf.ServiceNames(); !slices.Equal(got, config.EndpointServices) {
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
