package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
)

// The metric contract (docs/contracts/breaker-state-metric.md).
const (
	// DefaultNamespace is the CloudWatch namespace of breaker_state unless the
	// context names another.
	DefaultNamespace = "Kosha/Resilience"
	// MetricName is the gauge's name in CloudWatch.
	MetricName = "breaker_state"
	// DimDependency names the dependency whose breaker the value describes.
	DimDependency = "dependency"
	// DimService optionally names the service (gateway fleet) publishing.
	DimService = "service"
	// DimInstance optionally names the instance (execution environment).
	DimInstance = "instance"
)

// MaxQueriesPerRequest is CloudWatch's limit of MetricDataQuery structures in
// one GetMetricData request.
const MaxQueriesPerRequest = 500

// QueriesPerDependency is how many queries one dependency costs: its worst
// (Maximum), best (Minimum) and sample count over the fleet dimension set, and
// one SEARCH for the per-instance breakdown.
const QueriesPerDependency = 4

// DependenciesPerRequest is how many dependencies fit in one GetMetricData
// request; more are split across requests.
const DependenciesPerRequest = MaxQueriesPerRequest / QueriesPerDependency

// DefaultCloudWatchStaleAfter is how old an instance's newest point may be
// and still count as reporting: metrics reach CloudWatch a minute or two
// after they are emitted.
const DefaultCloudWatchStaleAfter = 5 * time.Minute

// getMetricDataAPI is the one CloudWatch call the dashboard makes; it is the
// SDK's own paginator client interface.
type getMetricDataAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

var (
	_ getMetricDataAPI                  = (*cloudwatch.Client)(nil)
	_ cloudwatch.GetMetricDataAPIClient = getMetricDataAPI(nil)
)

// CloudWatchOptions configure a [CloudWatch] source. Zero values take the
// documented defaults.
type CloudWatchOptions struct {
	// Namespace of the metric; default [DefaultNamespace].
	Namespace string
	// Service, when set, restricts every query to dimension service=Service.
	Service string
	// Region is only used to describe the source.
	Region string
	// Period of each timeline point; default [DefaultPeriod] (one minute, the
	// finest regular resolution).
	Period time.Duration
	// StaleAfter: default [DefaultCloudWatchStaleAfter].
	StaleAfter time.Duration
	// Clock: default the wall clock.
	Clock clock.Clock
}

// CloudWatch reads breaker_state from CloudWatch with GetMetricData: all
// dependencies and statistics in one request per [DependenciesPerRequest]
// dependencies, following NextToken pages.
type CloudWatch struct {
	api  getMetricDataAPI
	opts CloudWatchOptions
	// period is opts.Period in seconds, as GetMetricData takes it.
	period int32
}

// ErrInvalidSource reports a metrics source configuration that cannot work.
var ErrInvalidSource = errors.New("invalid metrics source")

// NewCloudWatch returns a source reading through api.
func NewCloudWatch(api getMetricDataAPI, opts CloudWatchOptions) (*CloudWatch, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Period%time.Minute != 0 {
		return nil, fmt.Errorf("%w: period %s is not a whole number of minutes", ErrInvalidSource, opts.Period)
	}
	// GetMetricData takes the period as an int32 of seconds (opts.Period is
	// positive here: defaulted above).
	secs := int64(opts.Period / time.Second)
	if secs <= 0 || secs > math.MaxInt32 {
		return nil, fmt.Errorf("%w: period %s is too long for CloudWatch (at most %d seconds)", ErrInvalidSource, opts.Period, math.MaxInt32)
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultCloudWatchStaleAfter
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	for what, v := range map[string]string{"namespace": opts.Namespace, "service": opts.Service} {
		// The values are quoted inside a SEARCH expression: keep quotes and
		// backslashes out so a config value cannot change the expression.
		if strings.ContainsAny(v, `"'\`) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 }) {
			return nil, fmt.Errorf("%w: cloudwatch %s %q contains a quote, backslash or control character", ErrInvalidSource, what, v)
		}
	}
	return &CloudWatch{api: api, opts: opts, period: int32(secs)}, nil
}

// Describe implements [GaugeSource].
func (c *CloudWatch) Describe() string {
	d := "cloudwatch " + c.opts.Namespace
	if c.opts.Service != "" {
		d += " service=" + c.opts.Service
	}
	if c.opts.Region != "" {
		d += " (" + c.opts.Region + ")"
	}
	return d
}

// Query kinds, the prefix of each MetricDataQuery Id. Ids must start with a
// lowercase letter and hold only letters, digits and underscores.
const (
	kindMax     = "mx"
	kindMin     = "mn"
	kindSamples = "sc"
	kindSearch  = "in"
)

// instanceLabel makes CloudWatch label each SEARCH result with its instance.
const instanceLabel = "${PROP('Dim." + DimInstance + "')}"

// Window returns the aligned [start, end) a fetch at now covers: whole
// periods, the current (still filling) one included.
func Window(now time.Time, window, period time.Duration) (start, end time.Time) {
	end = now.UTC().Truncate(period).Add(period)
	n := (window + period - 1) / period
	return end.Add(-n * period), end
}

// Queries builds the MetricDataQueries for deps (at most
// [DependenciesPerRequest]); the i-th dependency's queries carry ids ending
// in i.
func (c *CloudWatch) Queries(deps []string) []types.MetricDataQuery {
	period := c.period
	dims := func(dep string) []types.Dimension {
		d := []types.Dimension{{Name: aws.String(DimDependency), Value: aws.String(dep)}}
		if c.opts.Service != "" {
			d = append(d, types.Dimension{Name: aws.String(DimService), Value: aws.String(c.opts.Service)})
		}
		return d
	}
	stat := func(kind, stat string, i int, dep string) types.MetricDataQuery {
		return types.MetricDataQuery{
			Id:    aws.String(kind + strconv.Itoa(i)),
			Label: aws.String(dep + " " + stat),
			MetricStat: &types.MetricStat{
				Metric: &types.Metric{Namespace: aws.String(c.opts.Namespace), MetricName: aws.String(MetricName), Dimensions: dims(dep)},
				Period: aws.Int32(period),
				Stat:   aws.String(stat),
			},
			ReturnData: aws.Bool(true),
		}
	}
	out := make([]types.MetricDataQuery, 0, len(deps)*QueriesPerDependency)
	for i, dep := range deps {
		out = append(out,
			stat(kindMax, "Maximum", i, dep),
			stat(kindMin, "Minimum", i, dep),
			stat(kindSamples, "SampleCount", i, dep),
			types.MetricDataQuery{
				Id:         aws.String(kindSearch + strconv.Itoa(i)),
				Expression: aws.String(c.SearchExpression(dep)),
				Label:      aws.String(instanceLabel),
				ReturnData: aws.Bool(true),
			})
	}
	return out
}

// SearchExpression returns the SEARCH that finds dep's per-instance series:
// the metric schema with the instance dimension, exact-match terms, the
// per-period Maximum.
func (c *CloudWatch) SearchExpression(dep string) string {
	schema := []string{strconv.Quote(c.opts.Namespace), DimDependency, DimInstance}
	terms := []string{fmt.Sprintf("MetricName=%q", MetricName), fmt.Sprintf("%s=%q", DimDependency, dep)}
	if c.opts.Service != "" {
		schema = append(schema, DimService)
		terms = append(terms, fmt.Sprintf("%s=%q", DimService, c.opts.Service))
	}
	return fmt.Sprintf("SEARCH('{%s} %s', 'Maximum', %d)", strings.Join(schema, ","), strings.Join(terms, " "),
		int(c.opts.Period/time.Second))
}

// Fetch implements [GaugeSource].
func (c *CloudWatch) Fetch(ctx context.Context, deps []string, window time.Duration) (Snapshot, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	now := c.opts.Clock.Now()
	start, end := Window(now, window, c.opts.Period)
	snap := Snapshot{Source: c.Describe(), FetchedAt: now, Start: start, End: end, Period: c.opts.Period,
		StaleAfter: c.opts.StaleAfter, Series: map[string]Series{}}
	deps = uniqueValid(deps)
	for _, d := range deps {
		snap.Series[d] = Series{Dependency: d}
	}
	derived := 0
	for lo := 0; lo < len(deps); lo += DependenciesPerRequest {
		chunk := deps[lo:min(lo+DependenciesPerRequest, len(deps))]
		res, err := c.fetchChunk(ctx, chunk, start, end, &snap)
		if err != nil {
			return snap, err
		}
		for i, dep := range chunk {
			s := res.series(i, dep)
			if len(s.Timeline) == 0 && len(s.Instances) > 0 {
				s.Timeline = fleetTimeline(s.Instances)
				derived++
			}
			snap.Series[dep] = s
		}
	}
	if derived > 0 {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf(
			"%d dependencies have per-instance series but no fleet series: worst/best derived from instances (publish the fleet dimension set too; see the metric contract)", derived))
	}
	return snap, nil
}

// chunkResults accumulates one request's results across NextToken pages.
type chunkResults struct {
	// values[id][label][unix seconds] = value
	values map[string]map[string]map[int64]float64
}

func (r *chunkResults) add(res types.MetricDataResult) {
	id, label := aws.ToString(res.Id), aws.ToString(res.Label)
	byLabel, ok := r.values[id]
	if !ok {
		byLabel = map[string]map[int64]float64{}
		r.values[id] = byLabel
	}
	pts, ok := byLabel[label]
	if !ok {
		pts = map[int64]float64{}
		byLabel[label] = pts
	}
	for i, ts := range res.Timestamps {
		if i < len(res.Values) && !math.IsNaN(res.Values[i]) {
			pts[ts.Unix()] = res.Values[i]
		}
	}
}

func (c *CloudWatch) fetchChunk(ctx context.Context, deps []string, start, end time.Time, snap *Snapshot) (*chunkResults, error) {
	in := &cloudwatch.GetMetricDataInput{
		MetricDataQueries: c.Queries(deps),
		StartTime:         aws.Time(start),
		EndTime:           aws.Time(end),
		ScanBy:            types.ScanByTimestampAscending,
	}
	res := &chunkResults{values: map[string]map[string]map[int64]float64{}}
	pages := cloudwatch.NewGetMetricDataPaginator(c.api, in, func(o *cloudwatch.GetMetricDataPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	for pages.HasMorePages() {
		snap.Requests++
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("get metric data from %s: %w", c.Describe(), classifyAWS(err))
		}
		for _, m := range out.Messages {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("cloudwatch: %s: %s", aws.ToString(m.Code), aws.ToString(m.Value)))
		}
		for _, r := range out.MetricDataResults {
			res.add(r)
			if r.StatusCode == types.StatusCodeInternalError || r.StatusCode == types.StatusCodeForbidden {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("cloudwatch: query %s (%s) returned %s", aws.ToString(r.Id), aws.ToString(r.Label), r.StatusCode))
			}
			for _, m := range r.Messages {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("cloudwatch: query %s: %s: %s", aws.ToString(r.Id), aws.ToString(m.Code), aws.ToString(m.Value)))
			}
		}
	}
	return res, nil
}

// series assembles the i-th dependency of a chunk.
func (r *chunkResults) series(i int, dep string) Series {
	s := Series{Dependency: dep}
	idx := strconv.Itoa(i)
	one := func(kind string) map[int64]float64 {
		// Stat queries return one series, whatever its label.
		for _, pts := range r.values[kind+idx] {
			return pts
		}
		return nil
	}
	mx, mn, sc := one(kindMax), one(kindMin), one(kindSamples)
	for t, v := range mx {
		p := Point{Time: time.Unix(t, 0).UTC(), Max: v, Min: v}
		if m, ok := mn[t]; ok {
			p.Min = m
		}
		if n, ok := sc[t]; ok {
			p.Samples = int(math.Round(n))
		}
		s.Timeline = append(s.Timeline, p)
	}
	sortPoints(s.Timeline)
	for label, pts := range r.values[kindSearch+idx] {
		if len(pts) == 0 {
			continue
		}
		in := InstanceSeries{Instance: label}
		for t, v := range pts {
			// SEARCH returns each instance's per-period Maximum only.
			in.Points = append(in.Points, Point{Time: time.Unix(t, 0).UTC(), Max: v, Min: v, Samples: 1})
		}
		sortPoints(in.Points)
		in.LastSeen = in.Points[len(in.Points)-1].Time
		s.Instances = append(s.Instances, in)
	}
	sortInstances(s.Instances)
	return s
}

// uniqueValid drops duplicates and names that cannot be dependencies (they
// could not appear in the metric either), keeping order.
func uniqueValid(deps []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(deps))
	for _, d := range deps {
		if seen[d] || breaker.ValidateDependency(d) != nil {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// MetricsPerRefresh estimates how many metrics one refresh requests, the unit
// GetMetricData is billed in: three fleet statistics per dependency plus one
// per instance series a SEARCH returns.
func MetricsPerRefresh(deps, instances int) int {
	return deps * (QueriesPerDependency - 1 + instances)
}

// ListPricePerThousandMetrics is GetMetricData's list price in US dollars per
// 1,000 metrics requested (us-east-1; other regions differ slightly).
const ListPricePerThousandMetrics = 0.01

// CostPerHour estimates the GetMetricData cost of refreshing every interval.
func CostPerHour(deps, instances int, interval time.Duration) float64 {
	if interval <= 0 {
		return 0
	}
	refreshes := float64(time.Hour) / float64(interval)
	return refreshes * float64(MetricsPerRefresh(deps, instances)) / 1000 * ListPricePerThousandMetrics
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
