package metrics

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/config"
)

// SourceConfig says how to build a context's gauge source.
type SourceConfig struct {
	// Context is the resolved context.
	Context *config.Context
	// AWSConfig returns the context's AWS configuration; only called for a
	// CloudWatch source.
	AWSConfig func(ctx context.Context) (aws.Config, error)
	// PrometheusURL, when set, overrides the context's source (a --metrics-url
	// flag).
	PrometheusURL string
	Clock         clock.Clock
}

// NewSource builds the gauge source a context names: metrics.cloudwatch or
// metrics.prometheus. Without either, a local context scrapes the sandbox at
// [DefaultPrometheusURL] and an AWS context reads CloudWatch's
// [gauge.DefaultNamespace] in the store's region.
func NewSource(ctx context.Context, sc SourceConfig) (GaugeSource, error) {
	m := sc.Context.Metrics
	if sc.PrometheusURL != "" {
		return NewPrometheus([]string{sc.PrometheusURL}, PrometheusOptions{Clock: sc.Clock})
	}
	if m.CloudWatch != nil && m.Prometheus != nil {
		return nil, fmt.Errorf("%w: the context names both a cloudwatch and a prometheus metrics source; keep one", ErrInvalidSource)
	}
	if m.Prometheus != nil {
		return NewPrometheus([]string{m.Prometheus.URL}, PrometheusOptions{Clock: sc.Clock})
	}
	cw := m.CloudWatch
	if cw == nil {
		if sc.Context.IsLocal() {
			return NewPrometheus([]string{DefaultPrometheusURL}, PrometheusOptions{Clock: sc.Clock})
		}
		cw = &config.CloudWatchMetrics{}
	}
	if sc.AWSConfig == nil {
		return nil, fmt.Errorf("%w: cloudwatch metrics need an AWS configuration", ErrInvalidSource)
	}
	cfg, err := sc.AWSConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration for cloudwatch metrics: %w", err)
	}
	client := newCloudWatchClient(cfg, cw, cw.Region)
	region := cw.Region
	if region == "" {
		region = cfg.Region
	}
	return NewCloudWatch(client, CloudWatchOptions{Namespace: cw.Namespace, Service: cw.Service, Region: region, Clock: sc.Clock})
}

// newCloudWatchClient is the one CloudWatch client of a context (gauges and
// alarms alike), in region ("" for cfg's). Its endpoint is, most specific
// first: metrics.cloudwatch.endpoint-url, the context's cloudwatch endpoint
// (--service-endpoint cloudwatch=URL), then the SDK's own resolution
// (--endpoint-url, AWS_ENDPOINT_URL_CLOUDWATCH, AWS_ENDPOINT_URL, the shared
// config, AWS). The context's endpoint is pinned on the client as the
// DynamoDB, STS and Secrets Manager clients pin theirs, so an exported
// AWS_ENDPOINT_URL does not win over it.
func newCloudWatchClient(cfg aws.Config, cw *config.CloudWatchMetrics, region string) *cloudwatch.Client {
	return cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
		if region != "" {
			o.Region = region
		}
		switch ep, ok := awsconf.ServiceEndpoint(cfg, "CloudWatch"); {
		case cw.EndpointURL != "":
			o.BaseEndpoint = aws.String(cw.EndpointURL)
		case ok:
			o.BaseEndpoint = aws.String(ep)
		}
	})
}
