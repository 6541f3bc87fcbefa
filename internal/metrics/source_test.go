package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

func awsContext() *config.Context {
	return &config.Context{Store: config.StoreConfig{DynamoDB: &config.DynamoDBStore{Table: "kosha-control", Region: "eu-west-1"}}}
}

func staticAWS(context.Context) (aws.Config, error) {
	return aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake-secret", "")}, nil
}

// fakeAWS is staticAWS with the fake CloudWatch's HTTP client.
func fakeAWS(s *cwfake.Server) func(context.Context) (aws.Config, error) {
	return func(ctx context.Context) (aws.Config, error) {
		cfg, err := staticAWS(ctx)
		cfg.HTTPClient = s.HTTPClient()
		return cfg, err
	}
}

func TestNewSourceFollowsTheContext(t *testing.T) {
	noAWS := func(context.Context) (aws.Config, error) { return aws.Config{}, errors.New("context is local") }
	sandbox := &config.Context{Metrics: config.MetricsConfig{Prometheus: &config.PrometheusMetrics{URL: metrics.DefaultPrometheusURL}}}
	for _, tc := range []struct {
		name   string
		ctx    *config.Context
		url    string
		kind   metrics.SourceKind
		before string // the description before it is opened
		want   string
	}{
		{"local default is the sandbox", config.BuiltinLocal(), "", metrics.SourceSandbox, "prometheus http://127.0.0.1:8787/metrics", "prometheus http://127.0.0.1:8787/metrics"},
		{"the sandbox's URL named", sandbox, "", metrics.SourceSandbox, "prometheus http://127.0.0.1:8787/metrics", "prometheus http://127.0.0.1:8787/metrics"},
		{"prometheus named", &config.Context{Metrics: config.MetricsConfig{Prometheus: &config.PrometheusMetrics{URL: "http://127.0.0.1:9000/metrics"}}},
			"", metrics.SourcePrometheus, "prometheus http://127.0.0.1:9000/metrics", "prometheus http://127.0.0.1:9000/metrics"},
		{"flag overrides", awsContext(), "http://127.0.0.1:9100/metrics", metrics.SourcePrometheus, "prometheus http://127.0.0.1:9100/metrics", "prometheus http://127.0.0.1:9100/metrics"},
		{"aws default is cloudwatch", awsContext(), "", metrics.SourceCloudWatch, "cloudwatch", "cloudwatch Kosha/Resilience (eu-west-1)"},
		{"cloudwatch named", func() *config.Context {
			c := awsContext()
			c.Metrics.CloudWatch = &config.CloudWatchMetrics{Namespace: "Team/Breakers", Service: "gateway", Region: "us-east-1"}
			return c
		}(), "", metrics.SourceCloudWatch, "cloudwatch", "cloudwatch Team/Breakers service=gateway (us-east-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			awsCfg := staticAWS
			if tc.ctx.IsLocal() {
				awsCfg = noAWS
			}
			sc := metrics.SourceConfig{Context: tc.ctx, AWSConfig: awsCfg, PrometheusURL: tc.url}
			ch, err := metrics.ChooseSource(sc)
			if err != nil || ch.Kind != tc.kind || ch.Description != tc.before {
				t.Errorf("ChooseSource = %+v, %v; want kind %d, %q", ch, err, tc.kind, tc.before)
			}
			src, err := metrics.NewSource(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			if src.Describe() != tc.want || src.Kind != tc.kind {
				t.Errorf("source = %q (kind %d), want %q (kind %d)", src.Describe(), src.Kind, tc.want, tc.kind)
			}
			// The sandbox hint is every loopback scrape's (all of this
			// table's); the cost warning is CloudWatch's.
			if hint := src.Hint(); (hint != "") != (tc.kind != metrics.SourceCloudWatch) || hint != ch.Hint() {
				t.Errorf("hint = %q", hint)
			}
			fast, slow := src.CostWarning(4, 1, 10*time.Second), src.CostWarning(4, 1, time.Minute)
			if (fast != "") != (tc.kind == metrics.SourceCloudWatch) || slow != "" {
				t.Errorf("cost warning every 10s %q, every 1m %q", fast, slow)
			}
			if fast != "" && fast != metrics.CostWarning(4, 1, 10*time.Second) {
				t.Errorf("cost warning %q is not the cost model's", fast)
			}
		})
	}
}

func TestNewSourceErrors(t *testing.T) {
	both := &config.Context{Metrics: config.MetricsConfig{Prometheus: &config.PrometheusMetrics{URL: "http://127.0.0.1:1/metrics"},
		CloudWatch: &config.CloudWatchMetrics{}}}
	if _, err := metrics.NewSource(context.Background(), metrics.SourceConfig{Context: both}); !errors.Is(err, metrics.ErrInvalidSource) {
		t.Errorf("both sources: %v", err)
	}
	local := config.BuiltinLocal()
	local.Metrics.CloudWatch = &config.CloudWatchMetrics{}
	_, err := metrics.NewSource(context.Background(), metrics.SourceConfig{Context: local,
		AWSConfig: func(context.Context) (aws.Config, error) { return aws.Config{}, errors.New(`context "local" is local`) }})
	if err == nil || !strings.Contains(err.Error(), "is local") {
		t.Errorf("cloudwatch on a local context: %v", err)
	}
}

func TestNewSourceCloudWatchUsesTheEndpointAndRegionOfTheContext(t *testing.T) {
	s := cwfake.New(t)
	fill(s, "openai", 2, func(int, int) float64 { return 2 })
	c := awsContext()
	c.Metrics.CloudWatch = &config.CloudWatchMetrics{EndpointURL: s.URL}
	src, err := metrics.NewSource(context.Background(), metrics.SourceConfig{Context: c, AWSConfig: fakeAWS(s), Clock: clocktest.NewFake(now)})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if st := metrics.Merge(nil, nil, &snap, now)[0]; st.State != metrics.Open || s.Calls() != 1 {
		t.Errorf("state %s after %d calls", st.State, s.Calls())
	}
	if auth := s.Requests()[0].Header.Get("Authorization"); !strings.Contains(auth, "/eu-west-1/monitoring/aws4_request") {
		t.Errorf("request not signed for monitoring in eu-west-1: %q", auth)
	}
}
