package metrics

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

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

// SourceKind is which kind of gauge source a context reads.
type SourceKind int

const (
	// SourceCloudWatch reads the breaker_state metric from CloudWatch.
	SourceCloudWatch SourceKind = iota + 1
	// SourcePrometheus scrapes a Prometheus text endpoint.
	SourcePrometheus
	// SourceSandbox scrapes the local sandbox's /metrics
	// ([DefaultPrometheusURL]): a local context naming no source, or any
	// source naming that URL.
	SourceSandbox
)

// Choice is the gauge source a context names, decided before anything is
// read or configured.
type Choice struct {
	Kind SourceKind
	// Description names the source before it is opened: "prometheus URL",
	// or "cloudwatch" (its namespace and region are known once it is
	// opened: the [Source]'s Describe).
	Description string

	url string
	cw  *config.CloudWatchMetrics
}

// ChooseSource decides which gauge source sc names, without I/O: the
// --metrics-url flag (PrometheusURL), else metrics.cloudwatch or
// metrics.prometheus. Without either, a local context scrapes the sandbox
// at [DefaultPrometheusURL] and an AWS context reads CloudWatch's
// [gauge.DefaultNamespace] in the store's region. This is the one place
// the choice is made; [NewSource] opens what it chose.
func ChooseSource(sc SourceConfig) (Choice, error) {
	m := sc.Context.Metrics
	prom := func(url string) Choice {
		k := SourcePrometheus
		if url == DefaultPrometheusURL {
			k = SourceSandbox
		}
		return Choice{Kind: k, Description: "prometheus " + url, url: url}
	}
	switch {
	case sc.PrometheusURL != "":
		return prom(sc.PrometheusURL), nil
	case m.CloudWatch != nil && m.Prometheus != nil:
		return Choice{}, fmt.Errorf("%w: the context names both a cloudwatch and a prometheus metrics source; keep one", ErrInvalidSource)
	case m.Prometheus != nil:
		return prom(m.Prometheus.URL), nil
	case m.CloudWatch != nil:
		return Choice{Kind: SourceCloudWatch, Description: "cloudwatch", cw: m.CloudWatch}, nil
	case sc.Context.IsLocal():
		return prom(DefaultPrometheusURL), nil
	}
	return Choice{Kind: SourceCloudWatch, Description: "cloudwatch", cw: &config.CloudWatchMetrics{}}, nil
}

// Hint is what a view adds to an error reading the chosen source: [URLHint]
// of its URL.
func (c Choice) Hint() string { return URLHint(c.url) }

// Source is an opened gauge source and the [Choice] it opened.
type Source struct {
	GaugeSource
	Choice
}

// NewSource opens the gauge source [ChooseSource] picks for sc.
func NewSource(ctx context.Context, sc SourceConfig) (*Source, error) {
	ch, err := ChooseSource(sc)
	if err != nil {
		return nil, err
	}
	var src GaugeSource
	if ch.Kind == SourceCloudWatch {
		client, region, cerr := cloudWatchClient(ctx, sc, ch.cw)
		if cerr != nil {
			return nil, cerr
		}
		src, err = NewCloudWatch(client, CloudWatchOptions{Namespace: ch.cw.Namespace, Service: ch.cw.Service, Region: region, Clock: sc.Clock})
	} else {
		src, err = NewPrometheus([]string{ch.url}, PrometheusOptions{Clock: sc.Clock})
	}
	if err != nil {
		return nil, err
	}
	return &Source{GaugeSource: src, Choice: ch}, nil
}

// cloudWatchClient loads sc's AWS configuration and returns the context's
// CloudWatch client ([newCloudWatchClient]) and the region it reads: cw's,
// else the configuration's.
func cloudWatchClient(ctx context.Context, sc SourceConfig, cw *config.CloudWatchMetrics) (*cloudwatch.Client, string, error) {
	if sc.AWSConfig == nil {
		return nil, "", fmt.Errorf("%w: cloudwatch metrics need an AWS configuration", ErrInvalidSource)
	}
	cfg, err := sc.AWSConfig(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("load AWS configuration for cloudwatch metrics: %w", err)
	}
	region := cw.Region
	if region == "" {
		region = cfg.Region
	}
	return newCloudWatchClient(cfg, cw, cw.Region), region, nil
}

// CostWarning returns the warning a view refreshing s every interval shows
// ([CostWarning]'s text), or "" when refreshing costs nothing worth a
// warning: a source that is not CloudWatch, or an interval of a minute or
// more.
func (s *Source) CostWarning(deps, breakdowns int, interval time.Duration) string {
	if s.Kind != SourceCloudWatch || interval >= time.Minute {
		return ""
	}
	return CostWarning(deps, breakdowns, interval)
}

// Lag is the bound of the source it opened ([LagOf]): the embedded
// interface would hide it.
func (s *Source) Lag() time.Duration { return LagOf(s.GaugeSource) }

// URLHint is the one rule for the fix added to an unreachable gauge source
// at u: on this machine (a loopback address or localhost) the sandbox is
// what serves it, so it names how to start it; "" for other hosts and for
// CloudWatch (no URL).
func URLHint(u string) string {
	pu, err := url.Parse(u)
	if err != nil || u == "" {
		return ""
	}
	h := pu.Hostname()
	if ip := net.ParseIP(h); h == "localhost" || (ip != nil && ip.IsLoopback()) {
		return SandboxHint
	}
	return ""
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
