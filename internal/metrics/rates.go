package metrics

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	dto "github.com/prometheus/client_model/go"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/human"
)

// Defaults of the rate readers (docs/contracts/degradation-matrix.md,
// "Call rates").
const (
	// DefaultRateInterval is how far apart a Prometheus rate reader's two
	// scrapes are when it has no earlier scrape to measure from.
	DefaultRateInterval = 5 * time.Second
	// DefaultRateWindow is the longest span a rate is averaged over: on
	// Prometheus the oldest scrape kept, on CloudWatch the whole minutes
	// summed.
	DefaultRateWindow = 5 * time.Minute
)

// RateRequest names the tools and dependencies whose call rates to read.
type RateRequest struct {
	Tools        []string
	Dependencies []string
}

// CallRates are live call rates, in calls a minute averaged over Window.
type CallRates struct {
	// Source describes where they were read.
	Source string
	// Method says how they were measured, for a person ("increase between
	// two scrapes 5s apart").
	Method string
	// Window is the span the rates are averaged over; ReadAt when they
	// were read.
	Window time.Duration
	ReadAt time.Time
	// Tools and Dependencies map a name to its calls a minute; a name the
	// source has no series of is absent (not zero).
	Tools        map[string]float64
	Dependencies map[string]float64
	// Warnings are what was read only in part (a target that did not
	// answer while another did).
	Warnings []string

	// noData is set by a source that warns of the names it read without
	// a datapoint (CloudWatch): Warnings[sourceWarnings:] is that warning,
	// which [CallRates.Narrow] words again for the names it keeps.
	noData         bool
	sourceWarnings int
}

// Narrow returns the rates of req's names alone, as a read of req would
// have returned them from the same data (one read of many names answers
// several asks): the rates of req's names, and a warning of names without
// a datapoint naming only those. r must have been read for req's names
// (and may hold more).
func (r CallRates) Narrow(req RateRequest) CallRates {
	out := r
	out.Tools, out.Dependencies = pick(r.Tools, req.Tools), pick(r.Dependencies, req.Dependencies)
	out.Warnings = slices.Clip(r.Warnings) // shared by every narrowing: appending copies
	if r.noData {
		out.Warnings = slices.Clip(r.Warnings[:r.sourceWarnings])
		out.Warnings = append(out.Warnings, noDataWarnings(unique(req.Tools, gauge.DimensionValue), unique(req.Dependencies, validDependency), out)...)
	}
	return out
}

// pick is m's entries named in names.
func pick(m map[string]float64, names []string) map[string]float64 {
	out := make(map[string]float64, len(names))
	for _, n := range names {
		if v, ok := m[n]; ok {
			out[n] = v
		}
	}
	return out
}

// RateSource reads live call rates. [PrometheusRates] and
// [CloudWatchRates] implement it; [NewRateSource] opens the one a context
// names.
type RateSource interface {
	Describe() string
	Rates(ctx context.Context, req RateRequest) (CallRates, error)
}

var (
	_ RateSource = (*PrometheusRates)(nil)
	_ RateSource = (*CloudWatchRates)(nil)
)

// NewRateSource opens the call-rate reader of the source [ChooseSource]
// picks for sc: the same Prometheus endpoint or CloudWatch namespace (and
// service) the gauges are read from.
func NewRateSource(ctx context.Context, sc SourceConfig) (RateSource, error) {
	ch, err := ChooseSource(sc)
	if err != nil {
		return nil, err
	}
	if ch.Kind != SourceCloudWatch {
		return NewPrometheusRates([]string{ch.url}, PrometheusRateOptions{Clock: sc.Clock})
	}
	client, region, err := cloudWatchClient(ctx, sc, ch.cw)
	if err != nil {
		return nil, err
	}
	return NewCloudWatchRates(client, CloudWatchRateOptions{Namespace: ch.cw.Namespace, Service: ch.cw.Service, Region: region, Clock: sc.Clock}), nil
}

// PrometheusRateOptions configure a [PrometheusRates]. Zero values take
// the documented defaults.
type PrometheusRateOptions struct {
	// Client does the scrapes; default a client with a 5 s timeout, never
	// following a redirect ([nofollow.Client]).
	Client *http.Client
	// Interval between the two scrapes of a read with no earlier scrape;
	// default [DefaultRateInterval].
	Interval time.Duration
	// Window is the oldest scrape a rate is measured from; default
	// [DefaultRateWindow].
	Window time.Duration
	// Clock: default the wall clock. The wait between two scrapes is on it.
	Clock clock.Clock
}

// PrometheusRates reads call rates from Prometheus text endpoints (the
// sandbox's /metrics). A scrape gives counter totals, not rates: a rate is
// the counters' increase between two scrapes divided by the time between
// them. The reader keeps its scrapes for Window, so a reader asked again
// (the dashboard, every refresh) measures from its oldest scrape in the
// window without waiting; a first read scrapes twice, Interval apart. A
// counter that went down was reset (an instance restarted): its increase
// is its new value, as Prometheus's increase() counts it; a series that
// appeared between the scrapes counts from zero.
type PrometheusRates struct {
	urls []string
	opts PrometheusRateOptions

	mu      sync.Mutex
	scrapes []counterScrape // oldest first, within opts.Window
}

// counterScrape is one read of every target's call counters.
type counterScrape struct {
	at time.Time
	// values[series] is a counter's total; series is the target and the
	// sample's labels, so each counter is compared with itself.
	values map[counterSeries]float64
	// warnings are the targets that did not answer.
	warnings []string
}

// counterSeries identifies one counter series: its target, family, the
// tool or dependency it counts, and its other labels.
type counterSeries struct {
	target, family, name, labels string
}

// NewPrometheusRates returns a reader scraping each of urls (http or
// https).
func NewPrometheusRates(urls []string, opts PrometheusRateOptions) (*PrometheusRates, error) {
	client, err := scrapeClient(urls, opts.Client)
	if err != nil {
		return nil, err
	}
	opts.Client = client
	if opts.Interval <= 0 {
		opts.Interval = DefaultRateInterval
	}
	if opts.Window <= 0 {
		opts.Window = DefaultRateWindow
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &PrometheusRates{urls: slices.Clone(urls), opts: opts}, nil
}

// Describe implements [RateSource].
func (p *PrometheusRates) Describe() string { return "prometheus " + strings.Join(p.urls, ",") }

// Rates implements [RateSource]: it scrapes now and measures from the
// oldest scrape it kept within the window, or, with none, scrapes again
// Interval later (waiting on the clock, ended by ctx).
func (p *PrometheusRates) Rates(ctx context.Context, req RateRequest) (CallRates, error) {
	cur, err := p.scrape(ctx)
	if err != nil {
		return CallRates{}, err
	}
	p.mu.Lock()
	base, ok := p.base(cur.at)
	p.mu.Unlock()
	if !ok {
		select {
		case <-ctx.Done():
			return CallRates{}, fmt.Errorf("read call rates from %s: %w", p.Describe(), ctx.Err())
		case <-clock.After(p.opts.Clock, p.opts.Interval):
		}
		base = cur
		if cur, err = p.scrape(ctx); err != nil {
			return CallRates{}, err
		}
	}
	p.mu.Lock()
	p.keep(base, cur)
	p.mu.Unlock()
	span := cur.at.Sub(base.at)
	method := "counters' increase between two scrapes " + human.Duration(span.Round(time.Millisecond)) + " apart"
	out := CallRates{Source: p.Describe(), Method: method, Window: span, ReadAt: cur.at,
		Tools: map[string]float64{}, Dependencies: map[string]float64{}, Warnings: cur.warnings}
	if span <= 0 {
		return out, fmt.Errorf("read call rates from %s: %w: two scrapes at the same instant", p.Describe(), ErrUnavailable)
	}
	want := map[string][]string{
		gauge.ToolCallsPrometheusName:       req.Tools,
		gauge.DownstreamCallsPrometheusName: req.Dependencies,
	}
	for s, v := range cur.values {
		if !slices.Contains(want[s.family], s.name) {
			continue
		}
		inc := v // a series new since the base counts from zero
		if before, ok := base.values[s]; ok && v >= before {
			inc = v - before
		}
		perMinute := inc / span.Minutes()
		if s.family == gauge.ToolCallsPrometheusName {
			out.Tools[s.name] += perMinute
		} else {
			out.Dependencies[s.name] += perMinute
		}
	}
	return out, nil
}

// base returns the oldest scrape kept that is within the window before at.
// Call with mu held.
func (p *PrometheusRates) base(at time.Time) (counterScrape, bool) {
	for _, s := range p.scrapes {
		if s.at.Before(at) && !s.at.Before(at.Add(-p.opts.Window)) {
			return s, true
		}
	}
	return counterScrape{}, false
}

// keep records base and cur (base only when it was taken for this read)
// and forgets scrapes older than the window. Call with mu held.
func (p *PrometheusRates) keep(base, cur counterScrape) {
	if len(p.scrapes) == 0 || p.scrapes[len(p.scrapes)-1].at.Before(base.at) {
		p.scrapes = append(p.scrapes, base)
	}
	p.scrapes = append(p.scrapes, cur)
	cut := cur.at.Add(-p.opts.Window)
	i := 0
	for i < len(p.scrapes)-1 && p.scrapes[i].at.Before(cut) {
		i++
	}
	p.scrapes = slices.Clone(p.scrapes[i:])
}

// scrape reads every target's counters; a target that fails is a warning
// while another answers, and an error when none does.
func (p *PrometheusRates) scrape(ctx context.Context) (counterScrape, error) {
	results, errs, err := scrapeAll(p.urls, func(u string) (map[counterSeries]float64, error) {
		return scrapeCounters(ctx, p.opts.Client, u)
	})
	s := counterScrape{at: p.opts.Clock.Now(), values: map[counterSeries]float64{}, warnings: errStrings(errs)}
	for _, r := range results {
		maps.Copy(s.values, r)
	}
	return s, err
}

// scrapeCounters reads one target's tool and downstream call counters.
func scrapeCounters(ctx context.Context, client *http.Client, target string) (map[counterSeries]float64, error) {
	out := map[counterSeries]float64{}
	families := []string{gauge.ToolCallsPrometheusName, gauge.DownstreamCallsPrometheusName}
	err := scrapeTarget(ctx, client, target, families, func(mf *dto.MetricFamily) {
		nameLabel := gauge.DimTool
		if mf.GetName() == gauge.DownstreamCallsPrometheusName {
			nameLabel = gauge.DimDependency
		}
		for _, m := range mf.GetMetric() {
			v, ok := counterValue(m)
			if !ok {
				continue
			}
			s := counterSeries{target: target, family: mf.GetName()}
			var others []string
			for _, l := range m.GetLabel() {
				if l.GetName() == nameLabel {
					s.name = l.GetValue()
					continue
				}
				others = append(others, strconv.Quote(l.GetName())+"="+strconv.Quote(l.GetValue()))
			}
			slices.Sort(others)
			s.labels = strings.Join(others, ",")
			if s.name != "" {
				out[s] = v
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// counterValue is a counter (or untyped) sample's value when it can be a
// count: finite and not negative.
func counterValue(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.GetCounter() != nil:
		v = m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	return v, !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0
}

// CloudWatchRateOptions configure a [CloudWatchRates]. Zero values take
// the documented defaults.
type CloudWatchRateOptions struct {
	// Namespace of the counters; default [gauge.DefaultNamespace].
	Namespace string
	// Service, when set, restricts every query to dimension service=Service.
	Service string
	// Region is only used to describe the source.
	Region string
	// Window is how many whole minutes are summed; default
	// [DefaultRateWindow].
	Window time.Duration
	// Clock: default the wall clock.
	Clock clock.Clock
}

// CloudWatchRates reads call rates from CloudWatch: one GetMetricData
// request of per-minute Sums of tool_calls and downstream_calls over the
// Window's whole minutes that ended [RetrievalDelay] before now (newer
// minutes may not be readable in full yet), divided by the window's
// minutes. A minute without a datapoint counts as no calls (the fleet
// publishes the counts only when there are calls); a name without any
// datapoint in the window is left out, with a warning: CloudWatch cannot
// tell no calls from a fleet that does not publish the metric.
type CloudWatchRates struct {
	api  getMetricDataAPI
	opts CloudWatchRateOptions
}

// NewCloudWatchRates returns a reader reading through api.
func NewCloudWatchRates(api getMetricDataAPI, opts CloudWatchRateOptions) *CloudWatchRates {
	if opts.Namespace == "" {
		opts.Namespace = gauge.DefaultNamespace
	}
	if opts.Window < time.Minute {
		opts.Window = DefaultRateWindow
	}
	opts.Window = opts.Window.Truncate(time.Minute)
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &CloudWatchRates{api: api, opts: opts}
}

// Describe implements [RateSource].
func (c *CloudWatchRates) Describe() string {
	return describeCloudWatch(c.opts.Namespace, c.opts.Service, c.opts.Region)
}

// RateWindow returns the [start, end) a CloudWatch rate read at now sums:
// window's whole minutes ending at the minute [RetrievalDelay] before now.
func RateWindow(now time.Time, window time.Duration) (start, end time.Time) {
	end = now.UTC().Truncate(time.Minute).Add(-RetrievalDelay)
	return end.Add(-window), end
}

// Query kinds of a rate request: the prefix of each query id.
const (
	kindToolCalls       = "tc"
	kindDownstreamCalls = "dc"
)

// Rates implements [RateSource]: one GetMetricData request (pages
// followed) of every name's per-minute Sum. More names than one request
// holds are refused: the design has five tools and a handful of
// dependencies.
func (c *CloudWatchRates) Rates(ctx context.Context, req RateRequest) (CallRates, error) {
	now := c.opts.Clock.Now()
	start, end := RateWindow(now, c.opts.Window)
	tools, deps := unique(req.Tools, gauge.DimensionValue), unique(req.Dependencies, validDependency)
	out := CallRates{Source: c.Describe(), Window: c.opts.Window, ReadAt: now, Tools: map[string]float64{}, Dependencies: map[string]float64{},
		Method: fmt.Sprintf("per-minute Sums of the %s from %s to %s UTC (CloudWatch's %s retrieval delay left out)",
			human.Duration(c.opts.Window), start.Format("15:04"), end.Format("15:04"), human.Duration(RetrievalDelay))}
	if len(tools)+len(deps) == 0 {
		return out, nil
	}
	if len(tools)+len(deps) > MaxQueriesPerRequest {
		return out, fmt.Errorf("%w: %d call rates in one request: at most %d", ErrInvalidSource, len(tools)+len(deps), MaxQueriesPerRequest)
	}
	// Per-minute Sums, label "NAME calls".
	sum := func(kind string, i int, metric, dim, value string) types.MetricDataQuery {
		return statQuery(c.opts.Namespace, c.opts.Service, kind+strconv.Itoa(i), value+" calls", metric, dim, value, "Sum", int32(time.Minute/time.Second))
	}
	var queries []types.MetricDataQuery
	for i, t := range tools {
		queries = append(queries, sum(kindToolCalls, i, gauge.ToolCallsMetricName, gauge.DimTool, t))
	}
	for i, d := range deps {
		queries = append(queries, sum(kindDownstreamCalls, i, gauge.DownstreamCallsMetricName, gauge.DimDependency, d))
	}
	in := &cloudwatch.GetMetricDataInput{MetricDataQueries: queries, StartTime: aws.Time(start), EndTime: aws.Time(end),
		ScanBy: types.ScanByTimestampDescending}
	sums, seen := map[string]float64{}, map[string]bool{}
	pages := cloudwatch.NewGetMetricDataPaginator(c.api, in, func(o *cloudwatch.GetMetricDataPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return out, fmt.Errorf("get call rates from %s: %w", c.Describe(), classifyAWS(err))
		}
		for _, m := range page.Messages {
			out.Warnings = append(out.Warnings, fmt.Sprintf("cloudwatch: %s: %s", aws.ToString(m.Code), aws.ToString(m.Value)))
		}
		for _, r := range page.MetricDataResults {
			id := aws.ToString(r.Id)
			if r.StatusCode == types.StatusCodeInternalError || r.StatusCode == types.StatusCodeForbidden {
				return out, fmt.Errorf("get call rates from %s: %w: query %s returned %s", c.Describe(), ErrUnavailable, id, r.StatusCode)
			}
			for _, v := range r.Values {
				if !math.IsNaN(v) {
					sums[id] += v
					seen[id] = true
				}
			}
		}
	}
	minutes := c.opts.Window.Minutes()
	for i, t := range tools {
		if id := kindToolCalls + strconv.Itoa(i); seen[id] {
			out.Tools[t] = sums[id] / minutes
		}
	}
	for i, d := range deps {
		if id := kindDownstreamCalls + strconv.Itoa(i); seen[id] {
			out.Dependencies[d] = sums[id] / minutes
		}
	}
	out.noData, out.sourceWarnings = true, len(out.Warnings)
	out.Warnings = append(out.Warnings, noDataWarnings(tools, deps, out)...)
	return out, nil
}

// noDataWarnings is the warning of the tools and deps (unique, valid) a
// CloudWatch read asked for that have no rate in r: CloudWatch cannot
// tell no calls from a fleet that does not publish the metric.
func noDataWarnings(tools, deps []string, r CallRates) []string {
	var missing []string
	for _, t := range tools {
		if _, ok := r.Tools[t]; !ok {
			missing = append(missing, gauge.ToolCallsMetricName+" "+t)
		}
	}
	for _, d := range deps {
		if _, ok := r.Dependencies[d]; !ok {
			missing = append(missing, gauge.DownstreamCallsMetricName+" "+d)
		}
	}
	switch n := len(missing); {
	case n == 0:
		return nil
	case n == len(tools)+len(deps):
		return []string{fmt.Sprintf("cloudwatch: no %s or %s datapoint in the window: the fleet publishes none, or there were no calls",
			gauge.ToolCallsMetricName, gauge.DownstreamCallsMetricName)}
	case n > 3:
		missing = append(missing[:3:3], fmt.Sprintf("%d more", n-3))
	}
	return []string{fmt.Sprintf("cloudwatch: no datapoint in the window for %s: no calls, or the fleet does not publish the metric",
		strings.Join(missing, ", "))}
}
