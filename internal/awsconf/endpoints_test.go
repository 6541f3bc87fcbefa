package awsconf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// resolved returns the endpoint each client built from cfg resolves ("" = AWS).
func resolved(cfg aws.Config) map[string]string {
	return map[string]string{
		"dynamodb":       aws.ToString(dynamodb.NewFromConfig(cfg).Options().BaseEndpoint),
		"sts":            aws.ToString(sts.NewFromConfig(cfg).Options().BaseEndpoint),
		"secretsmanager": aws.ToString(secretsmanager.NewFromConfig(cfg).Options().BaseEndpoint),
		"cloudwatch":     aws.ToString(cloudwatch.NewFromConfig(cfg).Options().BaseEndpoint),
	}
}

func TestStandardEndpointConfiguration(t *testing.T) {
	//nolint:gosec // G101: the "secretsmanager" keys name a service; the values are endpoint URLs, not credentials.
	for _, tc := range []struct {
		name   string
		env    map[string]string
		config string // shared config file
		opts   Options
		want   map[string]string
	}{
		{name: "none", want: map[string]string{}},
		{name: "AWS_ENDPOINT_URL", env: map[string]string{"AWS_ENDPOINT_URL": "http://ls:4566"},
			want: map[string]string{"dynamodb": "http://ls:4566", "sts": "http://ls:4566", "secretsmanager": "http://ls:4566", "cloudwatch": "http://ls:4566"}},
		{name: "AWS_ENDPOINT_URL_<SERVICE>", env: map[string]string{"AWS_ENDPOINT_URL": "http://ls:4566", "AWS_ENDPOINT_URL_STS": "http://sts:1", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://sm:1"},
			want: map[string]string{"dynamodb": "http://ls:4566", "sts": "http://sts:1", "secretsmanager": "http://sm:1", "cloudwatch": "http://ls:4566"}},
		{name: "services section", env: map[string]string{"AWS_PROFILE": "dev"},
			config: "[profile dev]\nregion = us-east-1\nservices = local\n[services local]\ndynamodb =\n  endpoint_url = http://ddb:8000\nsts =\n  endpoint_url = http://sts:8001\n",
			want:   map[string]string{"dynamodb": "http://ddb:8000", "sts": "http://sts:8001"}},
		{name: "context one for all", env: map[string]string{"AWS_ENDPOINT_URL_STS": "http://sts-env:1"},
			opts: Options{EndpointURL: "http://ctx:1"},
			want: map[string]string{"dynamodb": "http://ctx:1", "sts": "http://ctx:1", "secretsmanager": "http://ctx:1", "cloudwatch": "http://ctx:1"}},
		{name: "context per service wins", env: map[string]string{"AWS_ENDPOINT_URL_STS": "http://sts-env:1", "AWS_PROFILE": "dev"},
			config: "[profile dev]\nregion = us-east-1\nservices = local\n[services local]\ndynamodb =\n  endpoint_url = http://ddb-shared:8000\n",
			opts:   Options{EndpointURL: "http://all:1", Endpoints: map[string]string{"sts": "http://sts-ctx:1", "dynamodb": "http://ddb-ctx:1", "cloudwatch": ""}},
			want:   map[string]string{"dynamodb": "http://ddb-ctx:1", "sts": "http://sts-ctx:1", "secretsmanager": "http://all:1", "cloudwatch": "http://all:1"}},
		{name: "ignore configured endpoints", env: map[string]string{"AWS_ENDPOINT_URL": "http://ls:4566", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"},
			want: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := isolate(t)
			unsetEndpointVars(t)
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if tc.config != "" {
				writeFile(t, filepath.Join(home, "config"), tc.config)
			}
			o := tc.opts
			o.Region = "us-east-1"
			cfg, err := Load(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			got := resolved(cfg)
			for svc, ep := range got {
				if ep != tc.want[svc] {
					t.Errorf("%s resolves %q, want %q", svc, ep, tc.want[svc])
				}
			}
			for name, sdkID := range Services {
				ep, ok := ServiceEndpoint(cfg, sdkID)
				if want := tc.opts.Endpoints[name]; ep != want || ok != (want != "") {
					t.Errorf("ServiceEndpoint(%s) = %q, %v; want the context's %q", sdkID, ep, ok, want)
				}
			}
		})
	}
}

// unsetEndpointVars unsets the endpoint variables [isolate] does not (the
// SDK tells set-but-empty from unset), restoring them when the test ends.
func unsetEndpointVars(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_SECRETS_MANAGER", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestInvalidEndpoints(t *testing.T) {
	isolate(t)
	for name, o := range map[string]Options{
		"unknown service":       {Endpoints: map[string]string{"s3": "http://x:1"}},
		"bad url":               {Endpoints: map[string]string{"sts": "localhost:4566"}},
		"static to AWS":         {EndpointURL: "http://127.0.0.1:8000", StaticCredentials: true, Endpoints: map[string]string{"sts": "https://sts.us-east-1.amazonaws.com"}},
		"static without dynamo": {StaticCredentials: true, Endpoints: map[string]string{"sts": "http://127.0.0.1:1"}},
	} {
		t.Run(name, func(t *testing.T) {
			o.Region = "us-east-1"
			if _, err := Load(context.Background(), o); err == nil || !strings.HasPrefix(err.Error(), "load aws config:") {
				t.Errorf("Load(%+v) = %v, want a load aws config error", o, err)
			}
		})
	}
	// Static credentials with a per-service DynamoDB endpoint alone are fine.
	if _, err := Load(context.Background(), Options{Region: "us-east-1", StaticCredentials: true,
		Endpoints: map[string]string{"dynamodb": "http://127.0.0.1:8000"}}); err != nil {
		t.Errorf("static credentials with endpoints.dynamodb: %v", err)
	}
}
