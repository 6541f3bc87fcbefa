package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

// pinnedContext is an endpoint context whose cloudwatch endpoint is cw (the
// DynamoDB endpoint is never called here).
func pinnedContext(cw string) *config.Context {
	return &config.Context{Store: config.StoreConfig{DynamoDB: &config.DynamoDBStore{Table: "kosha-control", Region: "eu-west-1",
		EndpointURL: "http://127.0.0.1:1", Endpoints: map[string]string{"cloudwatch": cw}}}}
}

// contextAWS loads c's AWS configuration the way the factory does.
func contextAWS(c *config.Context) func(context.Context) (aws.Config, error) {
	d := c.Store.DynamoDB
	return func(ctx context.Context) (aws.Config, error) {
		return awsconf.Load(ctx, awsconf.Options{Region: d.Region, EndpointURL: d.EndpointURL, Endpoints: d.Endpoints,
			StaticCredentials: true, MaxAttempts: 2})
	}
}

// TestCloudWatchClientsHonourThePinnedEndpoint: issue 22. With
// AWS_ENDPOINT_URL exported, the SDK skips per-service configuration, so the
// gauges and the alarm reads went to AWS_ENDPOINT_URL instead of the
// context's cloudwatch endpoint (which DynamoDB, STS and Secrets Manager
// clients pin).
func TestCloudWatchClientsHonourThePinnedEndpoint(t *testing.T) {
	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a CloudWatch call reached AWS_ENDPOINT_URL instead of the context's cloudwatch endpoint")
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(wrong.Close)
	t.Setenv("AWS_ENDPOINT_URL", wrong.URL)
	t.Setenv("AWS_ENDPOINT_URL_CLOUDWATCH", "")    // restored after the test
	_ = os.Unsetenv("AWS_ENDPOINT_URL_CLOUDWATCH") // the SDK skips the context's endpoint only when this is unset
	cw := cwfake.New(t)
	cw.Put("openai", "gw-1", now.Add(-30*time.Second), 2)
	cw.SetAlarm(cwfake.Alarm{Name: "kosha-openai-errors", State: "OK", Updated: now})
	c := pinnedContext(cw.URL)
	sc := metrics.SourceConfig{Context: c, AWSConfig: contextAWS(c), Clock: clocktest.NewFake(now)}
	src, err := metrics.NewSource(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Fetch(t.Context(), metrics.FetchRequest{Dependencies: []string{"openai"}}); err != nil {
		t.Errorf("gauges from the pinned endpoint: %v", err)
	}
	if cw.Calls() == 0 {
		t.Error("no GetMetricData reached the context's cloudwatch endpoint")
	}
	read, err := metrics.NewAlarmSource(sc).Describe(t.Context(), "", metrics.AlarmQuery{Prefixes: []string{"kosha-"}})
	if err != nil || len(read.Alarms) != 1 {
		t.Errorf("alarms from the pinned endpoint: %+v, %v", read, err)
	}
	// metrics.cloudwatch.endpoint-url is more specific still.
	other := cwfake.New(t)
	c.Metrics.CloudWatch = &config.CloudWatchMetrics{EndpointURL: other.URL}
	src, err = metrics.NewSource(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = src.Fetch(t.Context(), metrics.FetchRequest{Dependencies: []string{"openai"}})
	if other.Calls() == 0 {
		t.Error("metrics.cloudwatch.endpoint-url did not win over the context's cloudwatch endpoint")
	}
}

// TestAnEndpointThatIsNotCloudWatchIsNamed: a server that answers in
// something other than CloudWatch's protocol (a DynamoDB-only server's JSON
// 404) is
// reported as serving no CloudWatch, for gauges and alarms alike.
func TestAnEndpointThatIsNotCloudWatchIsNamed(t *testing.T) {
	notCW := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.service#UnknownOperationException"}`))
	}))
	t.Cleanup(notCW.Close)
	c := pinnedContext(notCW.URL)
	sc := metrics.SourceConfig{Context: c, AWSConfig: contextAWS(c), Clock: clocktest.NewFake(now)}
	src, err := metrics.NewSource(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Fetch(t.Context(), metrics.FetchRequest{Dependencies: []string{"openai"}})
	var nc *metrics.NotCloudWatchError
	if !errors.As(err, &nc) || nc.Endpoint != notCW.URL || nc.Operation != "GetMetricData" || nc.Status != http.StatusNotFound ||
		!errors.Is(err, metrics.ErrUnavailable) {
		t.Errorf("GetMetricData from a server that is not CloudWatch: %v (%+v)", err, nc)
	}
	if msg := err.Error(); !strings.Contains(msg, "--service-endpoint cloudwatch=URL") || !strings.Contains(msg, "--prometheus-url") {
		t.Errorf("the gauges' hint names neither fix: %v", err)
	}
	_, err = metrics.NewAlarmSource(sc).Describe(t.Context(), "", metrics.AlarmQuery{Prefixes: []string{"kosha-"}})
	if !errors.As(err, &nc) || nc.Operation != "DescribeAlarms" || !nc.Alarms {
		t.Errorf("DescribeAlarms from a server that is not CloudWatch: %v", err)
	}
	// Prometheus cannot answer alarms: their hint names the CloudWatch
	// endpoint alone.
	if msg := err.Error(); !strings.Contains(msg, "--service-endpoint cloudwatch=URL") || strings.Contains(msg, "rometheus") || strings.Contains(msg, "metrics-url") {
		t.Errorf("the alarms' hint: %v", err)
	}
}
