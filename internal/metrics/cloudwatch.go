package metrics

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/human"
)

// MaxQueriesPerRequest is CloudWatch's limit of MetricDataQuery structures in
// one GetMetricData request.
const MaxQueriesPerRequest = 500

// MaxMetricsPerRequest is CloudWatch's limit of metrics one GetMetricData
// request returns. Every series a SEARCH finds counts, not only the query:
// past the limit CloudWatch truncates the SEARCH results and says so in a
// MaxMetricsExceeded message.
const MaxMetricsPerRequest = 500

// FleetQueriesPerDependency is how many queries (and metrics) one
// dependency's fleet statistics cost: its worst (Maximum), best (Minimum) and
// sample count over the fleet dimension set.
const FleetQueriesPerDependency = 3

// DependenciesPerRequest is how many dependencies' fleet statistics fit in
// one GetMetricData request; more are split across requests.
const DependenciesPerRequest = MaxMetricsPerRequest / FleetQueriesPerDependency

// FleetLookback is how far back a CloudWatch fleet's current values may
// lie: each instance reports at least every [PublishPeriod], and a datapoint
// may take [RetrievalDelay] to become readable, so the newest minute (still
// filling, and readable only in part) can miss an open instance that the
// minutes before it hold.
const FleetLookback = PublishPeriod + RetrievalDelay

// DefaultCloudWatchStaleAfter is how old an instance's newest point may be
// and still count as reporting: metrics reach CloudWatch a minute or two
// after they are emitted.
const DefaultCloudWatchStaleAfter = 5 * time.Minute

// messageMaxMetrics is the code of CloudWatch's message that a request asked
// for more than [MaxMetricsPerRequest] metrics.
const messageMaxMetrics = "MaxMetricsExceeded"

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
	// Namespace of the metric; default [gauge.DefaultNamespace].
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
	// BreakdownEvery is how often a dependency's per-instance breakdown is
	// read again while it keeps being asked for; in between the last one is
	// reused. Default: Period (the instance series gain a point per period).
	BreakdownEvery time.Duration
	// Clock: default the wall clock.
	Clock clock.Clock
}

// CloudWatch reads breaker_state from CloudWatch with GetMetricData: every
// dependency's fleet statistics in one request per [DependenciesPerRequest]
// dependencies (following NextToken pages), and the per-instance breakdown
// of the dependencies asked for in further requests, each budgeted to at
// most [MaxMetricsPerRequest] metrics counting the series each SEARCH is
// expected to return.
type CloudWatch struct {
	api  getMetricDataAPI
	opts CloudWatchOptions
	// period is opts.Period in seconds, as GetMetricData takes it.
	period int32

	mu sync.Mutex
	// breakdowns holds each dependency's last breakdown, reused for
	// opts.BreakdownEvery.
	breakdowns map[string]breakdown
}

// breakdown is one dependency's per-instance series as last read.
type breakdown struct {
	at        time.Time
	instances []InstanceSeries
	state     Breakdown
	note      string
	// truncated: CloudWatch cut the request this came in; next time the
	// dependency gets a request of its own.
	truncated bool
}

// ErrInvalidSource reports a metrics source configuration that cannot work.
var ErrInvalidSource = exitcode.New(exitcode.Usage, "invalid metrics source")

// NewCloudWatch returns a source reading through api.
func NewCloudWatch(api getMetricDataAPI, opts CloudWatchOptions) (*CloudWatch, error) {
	if opts.Namespace == "" {
		opts.Namespace = gauge.DefaultNamespace
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
	if opts.BreakdownEvery <= 0 {
		opts.BreakdownEvery = opts.Period
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	control := func(r rune) bool { return r < 0x20 || r == 0x7f }
	// The namespace is a double-quoted name in the SEARCH schema, which has
	// no escapes: keep quotes and backslashes out of it.
	if strings.ContainsAny(opts.Namespace, `"'\`) || strings.ContainsFunc(opts.Namespace, control) {
		return nil, fmt.Errorf("%w: cloudwatch namespace %q contains a quote, backslash or control character; use the namespace the fleet publishes to", ErrInvalidSource, opts.Namespace)
	}
	// The service is an exact-match term, escaped by [searchTerm]; a single
	// quote would end the SEARCH string, which has no escape for it.
	if strings.ContainsRune(opts.Service, '\'') || strings.ContainsFunc(opts.Service, control) {
		return nil, fmt.Errorf("%w: cloudwatch service %q contains a single quote or control character; use the service dimension value the fleet publishes", ErrInvalidSource, opts.Service)
	}
	return &CloudWatch{api: api, opts: opts, period: int32(secs), breakdowns: map[string]breakdown{}}, nil
}

// Describe implements [GaugeSource].
func (c *CloudWatch) Describe() string {
	return describeCloudWatch(c.opts.Namespace, c.opts.Service, c.opts.Region)
}

// describeCloudWatch names a CloudWatch reader: its namespace, the service
// it reads (when one) and the region.
func describeCloudWatch(namespace, service, region string) string {
	d := "cloudwatch " + namespace
	if service != "" {
		d += " service=" + service
	}
	if region != "" {
		d += " (" + region + ")"
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
const instanceLabel = "${PROP('Dim." + gauge.DimInstance + "')}"

// Window returns the aligned [start, end) a fetch at now covers: whole
// periods, the current (still filling) one included.
func Window(now time.Time, window, period time.Duration) (start, end time.Time) {
	end = now.UTC().Truncate(period).Add(period)
	n := (window + period - 1) / period
	return end.Add(-n * period), end
}

// FleetQueries builds the fleet-statistics queries for deps (at most
// [DependenciesPerRequest]); the i-th dependency's queries carry ids ending
// in i.
func (c *CloudWatch) FleetQueries(deps []string) []types.MetricDataQuery {
	stat := func(kind, stat string, i int, dep string) types.MetricDataQuery {
		return statQuery(c.opts.Namespace, c.opts.Service, kind+strconv.Itoa(i), dep+" "+stat, gauge.MetricName, gauge.DimDependency, dep, stat, c.period)
	}
	out := make([]types.MetricDataQuery, 0, len(deps)*FleetQueriesPerDependency)
	for i, dep := range deps {
		out = append(out,
			stat(kindMax, "Maximum", i, dep),
			stat(kindMin, "Minimum", i, dep),
			stat(kindSamples, "SampleCount", i, dep))
	}
	return out
}

// statQuery is query id (labeled label) of metric's per-period stat for
// dimension dim=value, in namespace and, when set, dimension
// service=service.
func statQuery(namespace, service, id, label, metric, dim, value, stat string, period int32) types.MetricDataQuery {
	dims := []types.Dimension{{Name: aws.String(dim), Value: aws.String(value)}}
	if service != "" {
		dims = append(dims, types.Dimension{Name: aws.String(gauge.DimService), Value: aws.String(service)})
	}
	return types.MetricDataQuery{
		Id:    aws.String(id),
		Label: aws.String(label),
		MetricStat: &types.MetricStat{
			Metric: &types.Metric{Namespace: aws.String(namespace), MetricName: aws.String(metric), Dimensions: dims},
			Period: aws.Int32(period),
			Stat:   aws.String(stat),
		},
		ReturnData: aws.Bool(true),
	}
}

// SearchQueries builds the per-instance SEARCH queries for deps; the i-th
// dependency's query carries an id ending in i.
func (c *CloudWatch) SearchQueries(deps []string) []types.MetricDataQuery {
	out := make([]types.MetricDataQuery, 0, len(deps))
	for i, dep := range deps {
		out = append(out, types.MetricDataQuery{
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
	schema := []string{`"` + c.opts.Namespace + `"`, gauge.DimDependency, gauge.DimInstance}
	terms := []string{searchTerm("MetricName", gauge.MetricName), searchTerm(gauge.DimDependency, dep)}
	if c.opts.Service != "" {
		schema = append(schema, gauge.DimService)
		terms = append(terms, searchTerm(gauge.DimService, c.opts.Service))
	}
	return fmt.Sprintf("SEARCH('{%s} %s', 'Maximum', %d)", strings.Join(schema, ","), strings.Join(terms, " "),
		int(c.opts.Period/time.Second))
}

// searchTerm writes an exact-match term name="value": inside the quotes
// CloudWatch's SEARCH syntax wants ", \, ( and ) escaped with a backslash.
func searchTerm(name, value string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteString(`="`)
	for _, r := range value {
		switch r {
		case '"', '\\', '(', ')':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// Fetch implements [GaugeSource]. Worst, best and samples always come from
// the fleet statistics; the breakdown of the dependencies req asks for is
// read in requests of its own, reused for BreakdownEvery, and marked partial
// when CloudWatch says it truncated or cut it.
func (c *CloudWatch) Fetch(ctx context.Context, req FetchRequest) (Snapshot, error) {
	window := req.Window
	if window <= 0 {
		window = DefaultWindow
	}
	now := c.opts.Clock.Now()
	start, end := Window(now, window, c.opts.Period)
	snap := Snapshot{Source: c.Describe(), FetchedAt: now, Start: start, End: end, Period: c.opts.Period,
		StaleAfter: c.opts.StaleAfter, FleetLookback: FleetLookback, Series: map[string]Series{},
		ReadDelay: RetrievalDelay, Lag: OverrideLag}
	deps := unique(req.Dependencies, validDependency)
	for lo := 0; lo < len(deps); lo += DependenciesPerRequest {
		chunk := deps[lo:min(lo+DependenciesPerRequest, len(deps))]
		res, err := c.get(ctx, c.FleetQueries(chunk), start, end, &snap)
		if err != nil {
			return snap, err
		}
		for i, dep := range chunk {
			snap.Series[dep] = res.fleet(i, dep)
		}
	}
	if err := c.fetchBreakdowns(ctx, deps, req, start, end, &snap); err != nil {
		return snap, err
	}
	return snap, nil
}

// fetchBreakdowns fills the per-instance series of the dependencies req asks
// for, reading those whose last breakdown is older than BreakdownEvery.
func (c *CloudWatch) fetchBreakdowns(ctx context.Context, deps []string, req FetchRequest, start, end time.Time, snap *Snapshot) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var due []string
	for _, dep := range deps {
		s := snap.Series[dep]
		if !req.WantsInstances(dep) {
			s.Breakdown = BreakdownNotFetched
			snap.Series[dep] = s
			continue
		}
		if b, ok := c.breakdowns[dep]; !ok || snap.FetchedAt.Sub(b.at) >= c.opts.BreakdownEvery || b.at.After(snap.FetchedAt) {
			due = append(due, dep)
		}
	}
	failed := map[string]string{}
	for _, batch := range c.batches(due, snap) {
		res, err := c.get(ctx, c.SearchQueries(batch), start, end, snap)
		if ctx.Err() != nil {
			return err
		}
		if err != nil {
			// The fleet statistics are read: worst and best stand without
			// the breakdown, so its failure is a warning.
			snap.Warnings = append(snap.Warnings, "per-instance breakdown not read: "+err.Error())
			for _, dep := range batch {
				failed[dep] = "per-instance breakdown not read: " + err.Error()
			}
			continue
		}
		for i, dep := range batch {
			b := breakdown{at: snap.FetchedAt, instances: res.instances(i)}
			switch {
			case res.truncated:
				b.state, b.truncated = BreakdownPartial, true
				b.note = fmt.Sprintf("per-instance breakdown is partial: CloudWatch stopped at %d metrics per request (%d instance series returned); worst and best are the fleet's",
					MaxMetricsPerRequest, len(b.instances))
			case res.partial[kindSearch+strconv.Itoa(i)]:
				b.state = BreakdownPartial
				b.note = "per-instance breakdown is partial: CloudWatch returned PartialData; worst and best are the fleet's"
			}
			c.breakdowns[dep] = b
		}
	}
	for _, dep := range deps {
		if !req.WantsInstances(dep) {
			continue
		}
		s := snap.Series[dep]
		if note, ok := failed[dep]; ok {
			s.Breakdown, s.BreakdownNote = BreakdownNotFetched, note
			snap.Series[dep] = s
			continue
		}
		b := c.breakdowns[dep]
		s.Instances = append([]InstanceSeries(nil), b.instances...)
		s.Breakdown, s.BreakdownNote = b.state, b.note
		if len(s.Timeline) == 0 && len(s.Instances) > 0 {
			s.Timeline, s.TimelineFromInstances = fleetTimeline(s.Instances), true
			snap.Warnings = append(snap.Warnings, fmt.Sprintf(
				"%s has per-instance series but no fleet series: worst/best derived from instances (publish the fleet dimension set too; see the metric contract)", dep))
		}
		snap.Series[dep] = s
	}
	return nil
}

// batches packs deps into SEARCH requests whose queries plus expected series
// stay within [MaxMetricsPerRequest]. A dependency's expected series are the
// most instances seen for it (its last breakdown, or the largest fleet
// SampleCount in the window); one whose last request was truncated, or that
// is expected to fill a request, gets one of its own.
func (c *CloudWatch) batches(deps []string, snap *Snapshot) [][]string {
	var out [][]string
	var cur []string
	used := 0
	for _, dep := range deps {
		want := 0
		for _, p := range snap.Series[dep].Timeline {
			want = max(want, p.Samples)
		}
		b, seen := c.breakdowns[dep]
		if seen {
			want = max(want, len(b.instances))
		}
		cost := 1 + want
		if seen && b.truncated {
			cost = MaxMetricsPerRequest
		}
		cost = min(cost, MaxMetricsPerRequest)
		if len(cur) > 0 && (used+cost > MaxMetricsPerRequest || len(cur) == MaxQueriesPerRequest) {
			out = append(out, cur)
			cur, used = nil, 0
		}
		cur = append(cur, dep)
		used += cost
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// results accumulates one request's results across NextToken pages.
type results struct {
	// values[id][label][unix seconds] = value
	values map[string]map[string]map[int64]float64
	// partial holds the ids whose data CloudWatch left incomplete.
	partial map[string]bool
	// truncated: CloudWatch said the request asked for too many metrics.
	truncated bool
}

func (r *results) add(res types.MetricDataResult) {
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

// get sends one GetMetricData request (newest points first) and follows its
// pages. Messages become warnings; a result still PartialData after the last
// page is recorded in results.partial and warned about.
func (c *CloudWatch) get(ctx context.Context, queries []types.MetricDataQuery, start, end time.Time, snap *Snapshot) (*results, error) {
	in := &cloudwatch.GetMetricDataInput{
		MetricDataQueries: queries,
		StartTime:         aws.Time(start),
		EndTime:           aws.Time(end),
		ScanBy:            types.ScanByTimestampDescending,
	}
	res := &results{values: map[string]map[string]map[int64]float64{}, partial: map[string]bool{}}
	pages := cloudwatch.NewGetMetricDataPaginator(c.api, in, func(o *cloudwatch.GetMetricDataPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	// partialOnPage[id]: a result of query id on the latest page was
	// PartialData (a SEARCH has one result per series).
	var partialOnPage map[string]bool
	for pages.HasMorePages() {
		snap.Requests++
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("get metric data from %s: %w", c.Describe(), classifyAWS(err))
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Code) == messageMaxMetrics {
				res.truncated = true
			}
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("cloudwatch: %s: %s", aws.ToString(m.Code), aws.ToString(m.Value)))
		}
		partialOnPage = map[string]bool{}
		for _, r := range out.MetricDataResults {
			res.add(r)
			id := aws.ToString(r.Id)
			partialOnPage[id] = partialOnPage[id] || r.StatusCode == types.StatusCodePartialData
			if r.StatusCode == types.StatusCodeInternalError || r.StatusCode == types.StatusCodeForbidden {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("cloudwatch: query %s (%s) returned %s", id, aws.ToString(r.Label), r.StatusCode))
			}
			for _, m := range r.Messages {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("cloudwatch: query %s: %s: %s", id, aws.ToString(m.Code), aws.ToString(m.Value)))
			}
		}
	}
	var cut []string
	for _, id := range slices.Sorted(maps.Keys(partialOnPage)) {
		if partialOnPage[id] {
			res.partial[id] = true
			cut = append(cut, id)
		}
	}
	if len(cut) > 0 {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("cloudwatch: PartialData for %s (%s): the oldest points were not returned",
			human.Count(int64(len(cut)), "query"), strings.Join(cut, ", ")))
	}
	for _, byLabel := range res.values {
		// One metric per series returned: a stat query's one, a SEARCH's many.
		snap.Metrics += len(byLabel)
	}
	return res, nil
}

// fleet assembles the i-th dependency's fleet timeline.
func (r *results) fleet(i int, dep string) Series {
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
	return s
}

// instances assembles the i-th SEARCH's per-instance series.
func (r *results) instances(i int) []InstanceSeries {
	var out []InstanceSeries
	for label, pts := range r.values[kindSearch+strconv.Itoa(i)] {
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
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b InstanceSeries) int { return strings.Compare(a.Instance, b.Instance) })
	return out
}

// unique drops duplicates and the names keep refuses (none when nil),
// keeping order.
func unique(names []string, keep func(string) bool) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) && (keep == nil || keep(n)) {
			out = append(out, n)
		}
	}
	return out
}

// validDependency reports whether d can be a dependency's name (another
// could not appear in the metric either).
func validDependency(d string) bool { return breaker.ValidateDependency(d) == nil }
