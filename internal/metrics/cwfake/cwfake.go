// Package cwfake provides an in-process CloudWatch GetMetricData endpoint for
// tests: an httptest server that decodes the SDK's Smithy RPCv2 CBOR
// requests and encodes responses with smithy-go's encoding/cbor, so the real
// cloudwatch.Client (serializers, signing, paginator) runs against it.
//
// It serves breaker_state as the metric contract describes it
// (docs/contracts/breaker-state-metric.md): per-minute values per instance,
// aggregated on request into the fleet dimension set's Maximum, Minimum and
// SampleCount, and into per-instance series for a SEARCH expression. It
// also holds counters ([Server.PutCount]: the tool and downstream call
// counts of docs/contracts/degradation-matrix.md), each a metric named by
// its name and its whole dimension set, as CloudWatch identifies one, and
// answers their Sum, SampleCount, Maximum or Minimum per period.
//
// # Limits enforced as CloudWatch documents them
//
//   - At most [MaxMetrics] metrics per request, counting every query
//     (MetricStat or expression) and every series a SEARCH returns: past the cap the
//     SEARCH results are truncated (the fake keeps them in instance-name
//     order and drops the tail) and the response carries the message
//     MaxMetricsExceeded "Maximum number of allowed metrics exceeded"; the
//     rest of the request is still answered.
//   - At most MaxDatapoints (default [MaxDatapoints]) datapoints per
//     response, taken newest first under ScanBy=TimestampDescending (the
//     default) and oldest first under TimestampAscending; results cut short
//     are PartialData. Without a SEARCH the rest follows through NextToken;
//     a request with a SEARCH gets no NextToken, so the cut points are lost.
//   - Inside an exact-match term of a SEARCH, `"`, `\`, `(` and `)` must be
//     escaped with a backslash; an unescaped one is an
//     InvalidParameterValueException.
package cwfake

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// Path is where the SDK posts GetMetricData (RPCv2: service shape name and
// operation).
const Path = "/service/GraniteServiceVersion20100801/operation/GetMetricData"

// MaxQueries is the service's limit of queries per request.
const MaxQueries = 500

// MaxMetrics is the service's limit of metrics per request: the queries plus
// every series a SEARCH returns.
const MaxMetrics = 500

// MaxDatapoints is the default and largest number of datapoints one response
// holds.
const MaxDatapoints = 100800

// MessageMaxMetrics is the code and text of the response message CloudWatch
// adds when a request asked for more than [MaxMetrics] metrics.
const (
	MessageMaxMetricsCode  = "MaxMetricsExceeded"
	MessageMaxMetricsValue = "Maximum number of allowed metrics exceeded"
)

var idRE = regexp.MustCompile(`^[a-z][A-Za-z0-9_]*$`)

// searchRE parses the SEARCH expressions koshactl sends; the exact-match
// values are checked and unescaped by [unescapeTerm].
var searchRE = regexp.MustCompile(`^SEARCH\('\{"([^"]+)",dependency,instance(,service)?\} MetricName="breaker_state" dependency="((?:[^"\\]|\\.)*)"(?: service="((?:[^"\\]|\\.)*)")?', 'Maximum', (\d+)\)$`)

// unescapeTerm reads the inside of an exact-match term: `"`, `\`, `(` and
// `)` must be escaped with a backslash (the SEARCH syntax); any other
// backslash escape stands for the character itself.
func unescapeTerm(v string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '\\':
			if i+1 == len(v) {
				return "", fmt.Errorf("exact-match term %q ends in a lone backslash", v)
			}
			i++
			b.WriteByte(v[i])
		case '"', '(', ')':
			return "", fmt.Errorf("exact-match term %q: %q must be escaped with a backslash", v, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Query is one decoded MetricDataQuery.
type Query struct {
	ID, Label, Expression string
	Namespace, Metric     string
	Dimensions            map[string]string
	Stat                  string
	Period                int64
}

// Request is one decoded GetMetricData request.
type Request struct {
	Start, End    time.Time
	NextToken     string
	ScanBy        string
	MaxDatapoints int
	Queries       []Query
	// Header holds the request's HTTP headers.
	Header http.Header
	// Metrics is how many metrics the request was answered with (MetricStat
	// queries plus SEARCH series, after truncation), the unit GetMetricData
	// is billed in; Truncated reports that SEARCH results were cut at
	// [MaxMetrics].
	Metrics   int
	Truncated bool
}

// Failure is an error response the server returns instead of data.
type Failure struct {
	Status  int
	Type    string // e.g. "AccessDenied" or "com.amazonaws.cloudwatch#InvalidParameterValueException"
	Message string
	// QueryError, when set, is sent as the X-Amzn-Query-Error header
	// ("CODE;Sender"): the SDK then reports CODE.
	QueryError string
}

type datum struct {
	t time.Time
	v float64
	// readable is when the datum may be returned (zero: at once).
	readable time.Time
}

// Server is a fake CloudWatch holding breaker_state values.
type Server struct {
	*httptest.Server

	// Namespace and Service the data is published under (Service empty:
	// no service dimension).
	Namespace, Service string
	// Fleet publishes the fleet dimension set (dependency[, service]);
	// Instances publishes the per-instance set. Both default to true.
	Fleet, Instances bool
	// PageSize, when positive, caps datapoints per response below the
	// request's MaxDatapoints (to test paging without 100,800 points).
	PageSize int
	// Fail, when set, is asked before each request (n counts from 1) and
	// may return a failure to send instead.
	Fail func(n int) *Failure

	// Authorize, when set, is asked before each request, as IAM would be:
	// the action ("cloudwatch:GetMetricData") on the resource AWS
	// authorizes it on. GetMetricData has no resource-level permissions
	// ("*"); DescribeAlarms is authorized on "*" when it asks for composite
	// alarms or names none (AWS requires the permission scoped to *), else
	// on each named alarm's ARN. A non-empty answer is the message of the
	// AccessDenied the request gets instead.
	Authorize func(action, resource string, context map[string][]string) (denied string)

	// Clock and Delay model CloudWatch's retrieval delay: a datum put at
	// Clock's time t is returned only from t+Delay on (AWS documents that
	// a newly published datapoint can take up to two minutes before
	// statistics on it can be retrieved: [RetrievalDelay]). Without a
	// Clock, data is readable at once.
	Clock clock.Clock
	Delay time.Duration

	// alarms holds the DescribeAlarms side (alarms.go).
	alarms alarmStore

	mu       sync.Mutex
	data     map[string]map[string][]datum // dependency → instance → values
	counts   map[string][]datum            // countKey(namespace, metric, dimensions) → values
	requests []Request
	t        testing.TB
}

// New starts a server closed at the end of the test.
func New(t testing.TB) *Server {
	s := &Server{Namespace: "Kosha/Resilience", Fleet: true, Instances: true, data: map[string]map[string][]datum{},
		counts: map[string][]datum{}, t: t}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Client returns a real CloudWatch client pointed at the server, with
// static credentials and retries off (maxAttempts 0 means 1).
func (s *Server) Client(maxAttempts int) *cloudwatch.Client {
	if maxAttempts <= 0 {
		maxAttempts = 1
	}
	return cloudwatch.New(cloudwatch.Options{
		Region:           "eu-west-1",
		BaseEndpoint:     aws.String(s.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFAKE", "fake-secret", ""),
		HTTPClient:       s.HTTPClient(),
		RetryMaxAttempts: maxAttempts,
	})
}

// HTTPClient returns the HTTP client Client uses, for tests that build the
// CloudWatch client from an aws.Config instead.
func (s *Server) HTTPClient() *http.Client {
	return &http.Client{Transport: bufferedBodies{s.Server.Client().Transport}}
}

// bufferedBodies hands the transport a plain in-memory copy of each request
// body. smithy-go wraps bodies in a reader whose WriteTo returns io.EOF once
// the SDK has closed it, which it does as soon as the response headers
// arrive; against a server on loopback that can answer before the
// transport's final read of the body, and the transport then closes the
// connection under the response being read ("use of closed network
// connection", aws/aws-sdk-go-v2#2737; the SDK retries it). Tests count
// requests exactly, so they take the race out.
type bufferedBodies struct{ next http.RoundTripper }

func (b bufferedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return b.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return b.next.RoundTrip(r)
}

// RetrievalDelay is how long CloudWatch may take before a published
// datapoint can be read: "up to two minutes" (the put-metric-data
// reference).
const RetrievalDelay = 2 * time.Minute

// Put records that instance reported v for dependency at t (one datum;
// several in one minute aggregate as CloudWatch would). With a Clock, the
// datum becomes readable Delay after the clock's time of the Put.
func (s *Server) Put(dependency, instance string, t time.Time, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.data[dependency] == nil {
		s.data[dependency] = map[string][]datum{}
	}
	d := datum{t: t.UTC(), v: v}
	if s.Clock != nil {
		d.readable = s.Clock.Now().Add(s.Delay)
	}
	s.data[dependency][instance] = append(s.data[dependency][instance], d)
}

// PutCount records one datum v of metric (in the server's Namespace) with
// exactly dims at t, as a publisher's PutMetricData or EMF line would:
// a query names the same metric only with the same dimension set. With a
// Clock, the datum becomes readable Delay after the clock's time of the
// Put.
func (s *Server) PutCount(metric string, dims map[string]string, t time.Time, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := datum{t: t.UTC(), v: v}
	if s.Clock != nil {
		d.readable = s.Clock.Now().Add(s.Delay)
	}
	k := countKey(s.Namespace, metric, dims)
	s.counts[k] = append(s.counts[k], d)
}

// countKey identifies a metric: namespace, name and every dimension.
func countKey(namespace, metric string, dims map[string]string) string {
	var b strings.Builder
	b.WriteString(namespace + "\x00" + metric)
	for _, k := range sortedKeys(dims) {
		b.WriteString("\x00" + k + "=" + dims[k])
	}
	return b.String()
}

// readable drops the data not yet readable at the clock's time.
func (s *Server) readable(ds []datum) []datum {
	if s.Clock == nil {
		return ds
	}
	now := s.Clock.Now()
	out := make([]datum, 0, len(ds))
	for _, d := range ds {
		if !d.readable.After(now) {
			out = append(out, d)
		}
	}
	return out
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Calls returns how many GetMetricData requests were received.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == AlarmsPath {
		s.serveAlarms(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != Path {
		s.fail(w, &Failure{Status: 404, Type: "UnknownOperationException", Message: r.Method + " " + r.URL.Path})
		return
	}
	if r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" || r.Header.Get("Content-Type") != "application/cbor" {
		s.fail(w, &Failure{Status: 400, Type: "ValidationError", Message: "not an rpc-v2-cbor request"})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, &Failure{Status: 400, Type: "ValidationError", Message: err.Error()})
		return
	}
	req, err := decodeRequest(body)
	if err != nil {
		s.fail(w, &Failure{Status: 400, Type: "ValidationError", Message: err.Error()})
		return
	}
	req.Header = r.Header.Clone()
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()
	if s.Fail != nil {
		if f := s.Fail(n); f != nil {
			s.fail(w, f)
			return
		}
	}
	if s.Authorize != nil {
		if msg := s.Authorize("cloudwatch:GetMetricData", "*", nil); msg != "" {
			s.fail(w, accessDenied(msg))
			return
		}
	}
	if err := validate(req); err != nil {
		s.fail(w, &Failure{Status: 400, Type: "com.amazonaws.cloudwatch#InvalidParameterValueException", Message: err.Error()})
		return
	}
	results, truncated, err := s.answer(req)
	if err != nil {
		s.fail(w, &Failure{Status: 400, Type: "com.amazonaws.cloudwatch#InvalidParameterValueException", Message: err.Error()})
		return
	}
	s.mu.Lock()
	s.requests[n-1].Metrics, s.requests[n-1].Truncated = len(results), truncated
	s.mu.Unlock()
	limit := req.MaxDatapoints
	if limit <= 0 || limit > MaxDatapoints {
		limit = MaxDatapoints
	}
	if s.PageSize > 0 {
		limit = min(limit, s.PageSize)
	}
	page, next := paginate(results, req.NextToken, limit, req.ScanBy, hasSearch(req))
	messages := cbor.List{}
	if truncated {
		messages = append(messages, cbor.Map{"Code": cbor.String(MessageMaxMetricsCode), "Value": cbor.String(MessageMaxMetricsValue)})
	}
	out := cbor.Map{"MetricDataResults": page, "Messages": messages}
	if next != "" {
		out["NextToken"] = cbor.String(next)
	}
	payload := cbor.Encode(out)
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	_, _ = w.Write(payload)
}

// accessDenied is CloudWatch's answer to a request IAM refuses. CloudWatch
// is awsQuery-compatible: the X-Amzn-Query-Error header carries the query
// protocol's code, AccessDenied, which is what the SDK surfaces.
func accessDenied(msg string) *Failure {
	return &Failure{Status: http.StatusForbidden, Type: "com.amazon.coral.service#AccessDeniedException", Message: msg,
		QueryError: "AccessDenied;Sender"}
}

func (s *Server) fail(w http.ResponseWriter, f *Failure) {
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	if f.QueryError != "" {
		w.Header().Set("X-Amzn-Query-Error", f.QueryError)
	}
	w.WriteHeader(f.Status)
	_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String(f.Type), "message": cbor.String(f.Message)}))
}

// series is one result before paging.
type series struct {
	id, label string
	points    []datum
}

// answer computes the request's series, SEARCH results cut so that the
// request returns at most MaxMetrics metrics (MetricStat queries count one
// each and are always answered).
func (s *Server) answer(req Request) (out []series, truncated bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Every query counts (CloudWatch limits a graph to 500 "metrics and
	// expressions"), and every series a SEARCH returns.
	budget := MaxMetrics - len(req.Queries)
	for _, q := range req.Queries {
		if q.Expression != "" {
			found, err := s.search(q, req)
			if err != nil {
				return nil, false, err
			}
			if len(found) > budget {
				found, truncated = found[:max(budget, 0)], true
			}
			budget -= len(found)
			out = append(out, found...)
			continue
		}
		sr := series{id: q.ID, label: q.Label}
		if ds, ok := s.counts[countKey(q.Namespace, q.Metric, q.Dimensions)]; ok && q.Metric != "breaker_state" {
			sr.points = aggregate(s.readable(ds), req.Start, req.End, q.Period, q.Stat)
		}
		if s.Fleet && q.Namespace == s.Namespace && q.Metric == "breaker_state" && s.dimsMatch(q.Dimensions) {
			byInstance := s.data[q.Dimensions["dependency"]]
			var all []datum
			for _, ds := range byInstance {
				all = append(all, s.readable(ds)...)
			}
			sr.points = aggregate(all, req.Start, req.End, q.Period, q.Stat)
		}
		out = append(out, sr)
	}
	for i := range out {
		sortData(out[i].points, req.ScanBy)
	}
	return out, truncated, nil
}

func hasSearch(req Request) bool {
	for _, q := range req.Queries {
		if q.Expression != "" {
			return true
		}
	}
	return false
}

func (s *Server) dimsMatch(d map[string]string) bool {
	want := 1
	if s.Service != "" {
		want = 2
		if d["service"] != s.Service {
			return false
		}
	}
	return len(d) == want && d["dependency"] != ""
}

func (s *Server) search(q Query, req Request) ([]series, error) {
	m := searchRE.FindStringSubmatch(q.Expression)
	if m == nil {
		s.t.Errorf("cwfake: unexpected expression %q", q.Expression)
		return nil, nil
	}
	ns, withService := m[1], m[2] != ""
	dep, err := unescapeTerm(m[3])
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.ID, err)
	}
	service, err := unescapeTerm(m[4])
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.ID, err)
	}
	period, _ := strconv.ParseInt(m[5], 10, 64)
	if !s.Instances || ns != s.Namespace || withService != (s.Service != "") || service != s.Service {
		return nil, nil
	}
	var out []series
	for _, inst := range sortedKeys(s.data[dep]) {
		pts := aggregate(s.readable(s.data[dep][inst]), req.Start, req.End, period, "Maximum")
		if len(pts) == 0 {
			continue // SEARCH finds only metrics with data
		}
		label := strings.ReplaceAll(q.Label, "${PROP('Dim.instance')}", inst)
		out = append(out, series{id: q.ID, label: label, points: pts})
	}
	return out, nil
}

// aggregate computes stat per period over [start, end).
func aggregate(ds []datum, start, end time.Time, period int64, stat string) []datum {
	p := time.Duration(period) * time.Second
	type acc struct {
		max, min, sum float64
		n             int
	}
	buckets := map[int64]*acc{}
	for _, d := range ds {
		if d.t.Before(start) || !d.t.Before(end) {
			continue
		}
		k := d.t.Truncate(p).Unix()
		a, ok := buckets[k]
		if !ok {
			buckets[k] = &acc{d.v, d.v, d.v, 1}
			continue
		}
		a.max, a.min, a.sum, a.n = math.Max(a.max, d.v), math.Min(a.min, d.v), a.sum+d.v, a.n+1
	}
	out := make([]datum, 0, len(buckets))
	for k, a := range buckets {
		v := a.max
		switch stat {
		case "Minimum":
			v = a.min
		case "SampleCount":
			v = float64(a.n)
		case "Sum":
			v = a.sum
		case "Average":
			v = a.sum / float64(a.n)
		}
		out = append(out, datum{t: time.Unix(k, 0).UTC(), v: v})
	}
	return out
}

func sortData(ds []datum, scanBy string) {
	sort.Slice(ds, func(i, j int) bool {
		if scanBy == "TimestampAscending" {
			return ds[i].t.Before(ds[j].t)
		}
		return ds[i].t.After(ds[j].t)
	})
}

// paginate returns one page of at most limit datapoints after token,
// chosen across every series in ScanBy order (newest first unless
// TimestampAscending), and the token of the rest. A request with a SEARCH
// gets no token: what did not fit is lost, and its series say PartialData.
func paginate(all []series, token string, limit int, scanBy string, search bool) (cbor.List, string) {
	offset := 0
	if token != "" {
		offset, _ = strconv.Atoi(strings.TrimPrefix(token, "page-"))
	}
	type ref struct{ series, point int }
	var order []ref
	for si, s := range all {
		for pi := range s.points {
			order = append(order, ref{si, pi})
		}
	}
	asc := scanBy == "TimestampAscending"
	sort.SliceStable(order, func(i, j int) bool {
		ti, tj := all[order[i].series].points[order[i].point].t, all[order[j].series].points[order[j].point].t
		if ti.Equal(tj) {
			return order[i].series < order[j].series
		}
		if asc {
			return ti.Before(tj)
		}
		return ti.After(tj)
	})
	end := min(len(order), offset+limit)
	in := map[ref]bool{}
	for _, r := range order[min(offset, end):end] {
		in[r] = true
	}
	more := end < len(order)
	out := cbor.List{}
	for si, s := range all {
		ts, vs := cbor.List{}, cbor.List{}
		for pi, d := range s.points {
			if in[ref{si, pi}] {
				ts = append(ts, &cbor.Tag{ID: 1, Value: cbor.Float64(float64(d.t.Unix()))})
				vs = append(vs, cbor.Float64(d.v))
			}
		}
		status := "Complete"
		if more {
			status = "PartialData"
		}
		// Every page names every series, as CloudWatch does.
		out = append(out, cbor.Map{"Id": cbor.String(s.id), "Label": cbor.String(s.label), "StatusCode": cbor.String(status),
			"Timestamps": ts, "Values": vs, "Messages": cbor.List{}})
	}
	if more && !search {
		return out, fmt.Sprintf("page-%d", end)
	}
	return out, ""
}

// statistics are the standard statistics a MetricStat may ask for (the
// fake serves no percentiles).
var statistics = map[string]bool{"SampleCount": true, "Average": true, "Sum": true, "Minimum": true, "Maximum": true}

func validate(req Request) error {
	if len(req.Queries) == 0 || len(req.Queries) > MaxQueries {
		return fmt.Errorf("%d queries: between 1 and %d allowed", len(req.Queries), MaxQueries)
	}
	if !req.Start.Before(req.End) {
		return fmt.Errorf("StartTime %s is not before EndTime %s", req.Start, req.End)
	}
	seen := map[string]bool{}
	for _, q := range req.Queries {
		if !idRE.MatchString(q.ID) {
			return fmt.Errorf("invalid query id %q", q.ID)
		}
		if seen[q.ID] {
			return fmt.Errorf("duplicate query id %q", q.ID)
		}
		seen[q.ID] = true
		if (q.Expression == "") == (q.Stat == "") {
			return fmt.Errorf("query %s: exactly one of Expression and MetricStat", q.ID)
		}
		if q.Expression == "" && !statistics[q.Stat] {
			return fmt.Errorf("query %s: statistic %q: use SampleCount, Average, Sum, Minimum or Maximum", q.ID, q.Stat)
		}
		if q.Expression == "" && (q.Period <= 0 || q.Period%60 != 0) {
			return fmt.Errorf("query %s: period %d is not a multiple of 60", q.ID, q.Period)
		}
	}
	return nil
}

func decodeRequest(body []byte) (Request, error) {
	v, err := cbor.Decode(body)
	if err != nil {
		return Request{}, fmt.Errorf("decode cbor: %w", err)
	}
	m, ok := v.(cbor.Map)
	if !ok {
		return Request{}, fmt.Errorf("request is %T, not a map", v)
	}
	var req Request
	if req.Start, err = cbor.AsTime(m["StartTime"]); err != nil {
		return req, fmt.Errorf("StartTime: %w", err)
	}
	if req.End, err = cbor.AsTime(m["EndTime"]); err != nil {
		return req, fmt.Errorf("EndTime: %w", err)
	}
	req.NextToken = str(m["NextToken"])
	req.ScanBy = str(m["ScanBy"])
	if v, ok := m["MaxDatapoints"]; ok {
		n, err := cbor.AsInt64(v)
		if err != nil {
			return req, fmt.Errorf("MaxDatapoints: %w", err)
		}
		req.MaxDatapoints = int(n)
	}
	queries, _ := m["MetricDataQueries"].(cbor.List)
	for _, qv := range queries {
		qm, ok := qv.(cbor.Map)
		if !ok {
			return req, fmt.Errorf("query is %T", qv)
		}
		q := Query{ID: str(qm["Id"]), Label: str(qm["Label"]), Expression: str(qm["Expression"])}
		if ms, ok := qm["MetricStat"].(cbor.Map); ok {
			q.Stat = str(ms["Stat"])
			q.Period, _ = cbor.AsInt64(ms["Period"])
			if metric, ok := ms["Metric"].(cbor.Map); ok {
				q.Namespace, q.Metric = str(metric["Namespace"]), str(metric["MetricName"])
				q.Dimensions = map[string]string{}
				dims, _ := metric["Dimensions"].(cbor.List)
				for _, dv := range dims {
					if dm, ok := dv.(cbor.Map); ok {
						q.Dimensions[str(dm["Name"])] = str(dm["Value"])
					}
				}
			}
		}
		req.Queries = append(req.Queries, q)
	}
	return req, nil
}

func str(v cbor.Value) string {
	s, _ := v.(cbor.String)
	return string(s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
