package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/nofollow"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultPrometheusURL is where the local sandbox exposes its gauges.
const DefaultPrometheusURL = "http://127.0.0.1:8787/metrics"

// SandboxHint is the fix for a source on this machine that does not
// answer: the sandbox is what serves it.
const SandboxHint = "is the sandbox running? start it with koshactl sandbox"

// maxScrapeBytes bounds one scrape's body: a body longer than this is
// refused whole ([tooLargeError]), never parsed as far as the cap reached.
const maxScrapeBytes = 16 << 20

// acceptHeader asks for the text format (what the sandbox serves), with
// protobuf and OpenMetrics accepted too.
const acceptHeader = `text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.8,` +
	`application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,*/*;q=0.1`

// PrometheusOptions configure a [Prometheus] source. Zero values take the
// documented defaults.
type PrometheusOptions struct {
	// Client does the scrapes; default a client with a 5 s timeout. A
	// scrape never follows a redirect, whatever the client's own policy
	// (the source uses a copy of it, [nofollow.Client]).
	Client *http.Client
	// Period of each timeline point; default [DefaultPeriod].
	Period time.Duration
	// Clock: default the wall clock.
	Clock clock.Clock
}

// Prometheus scrapes breaker gauges from Prometheus text endpoints (the
// sandbox's /metrics). A scrape is a single instant, so the source keeps the
// values it has seen and builds the timeline from its own past scrapes: it
// starts empty and fills as the dashboard runs.
type Prometheus struct {
	urls []string
	opts PrometheusOptions

	mu sync.Mutex
	// fleet[dependency][instance] is what the scrapes said of an instance
	// read since the window's start: the instances known, against which a
	// fleet that shrank is told.
	fleet map[string]map[string]*scraped
}

// scraped is what the scrapes said of one instance of a dependency.
type scraped struct {
	// points holds one point per period, oldest first, of its states.
	points []Point
	// seen is the last scrape that reported it with a state, and last the
	// state it reported.
	seen time.Time
	last float64
	// read is its reading in the newest scrape (nil: absent from it), and
	// present the last scrape that held it, whatever its value.
	read    *Reading
	present time.Time
}

// NewPrometheus returns a source scraping each of urls (http or https).
func NewPrometheus(urls []string, opts PrometheusOptions) (*Prometheus, error) {
	client, err := scrapeClient(urls, opts.Client)
	if err != nil {
		return nil, err
	}
	opts.Client = client
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Prometheus{urls: append([]string(nil), urls...), opts: opts, fleet: map[string]map[string]*scraped{}}, nil
}

// scrapeClient checks a Prometheus reader's urls (at least one, each
// http or https with a host) and returns the client it scrapes with: c (a
// 5s-timeout one when nil) following no redirect.
func scrapeClient(urls []string, c *http.Client) (*http.Client, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no prometheus url", ErrInvalidSource)
	}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("%w: prometheus url %q: want http://host:port/path", ErrInvalidSource, u)
		}
	}
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	return nofollow.Client(c), nil
}

// Describe implements [GaugeSource].
func (p *Prometheus) Describe() string { return "prometheus " + strings.Join(p.urls, ",") }

// sample is one gauge value of one scrape, as the exposition gave it.
type sample struct {
	dependency, instance string
	value                float64
	// at is the sample's own timestamp, zero when it has none.
	at time.Time
}

// Fetch implements [GaugeSource]. It scrapes every target concurrently; a
// failed target is a warning while another answers, and an error when none
// does.
func (p *Prometheus) Fetch(ctx context.Context, req FetchRequest) (Snapshot, error) {
	deps, window := req.Dependencies, req.Window
	if window <= 0 {
		window = DefaultWindow
	}
	now := p.opts.Clock.Now()
	start, end := Window(now, window, p.opts.Period)
	snap := Snapshot{Source: p.Describe(), FetchedAt: now, Start: start, End: end, Period: p.opts.Period,
		Series: map[string]Series{}, Requests: len(p.urls), Live: true, Lag: ScrapeLag}
	type result struct {
		samples []sample
		skipped int
	}
	results, errs, err := scrapeAll(p.urls, func(u string) (result, error) {
		s, skipped, err := p.scrape(ctx, u)
		return result{s, skipped}, err
	})
	if err != nil {
		return snap, err
	}
	var all []sample
	for i, r := range results {
		if r.skipped > 0 {
			snap.Warnings = append(snap.Warnings, fmt.Sprintf("%s: %d %s samples ignored (no dependency label, or a value that is not 0..3: such an instance cannot confirm a change)",
				p.urls[i], r.skipped, gauge.PrometheusMetricName))
		}
		all = append(all, r.samples...)
	}
	snap.Warnings = append(snap.Warnings, errStrings(errs)...)

	p.mu.Lock()
	defer p.mu.Unlock()
	p.record(all, now)
	p.prune(start)
	for _, d := range unique(deps, validDependency) {
		snap.Series[d] = Series{Dependency: d}
	}
	for dep, known := range p.fleet {
		s := Series{Dependency: dep}
		for _, name := range slices.Sorted(maps.Keys(known)) {
			k := known[name]
			in := InstanceSeries{Instance: name, LastRead: k.present}
			if len(k.points) > 0 {
				last := k.last
				in.Points, in.LastSeen, in.Last = slices.Clone(k.points), k.seen, &last
			}
			if k.read != nil {
				cp := *k.read
				in.Newest = &cp
			}
			s.Instances = append(s.Instances, in)
		}
		s.Timeline = fleetTimeline(s.Instances)
		s.TimelineFromInstances = true
		snap.Series[dep] = s
	}
	// An instance absent from this scrape is not reporting: it was last seen
	// before now. Everything scraped now was seen exactly now.
	snap.StaleAfter = 0
	return snap, nil
}

// record adds one scrape's samples to the history. Every sample that is a
// state is stamped with now, the scrape's time: an instance present in the
// scrape is current. Every sample, state or not, is the instance's reading
// in the newest read ([Goal.Stand] judges it).
func (p *Prometheus) record(samples []sample, now time.Time) {
	bucket := now.UTC().Truncate(p.opts.Period)
	for _, known := range p.fleet {
		for _, k := range known {
			k.read = nil
		}
	}
	for _, s := range samples {
		if p.fleet[s.dependency] == nil {
			p.fleet[s.dependency] = map[string]*scraped{}
		}
		k := p.fleet[s.dependency][s.instance]
		if k == nil {
			k = &scraped{}
			p.fleet[s.dependency][s.instance] = k
		}
		k.present = now
		if k.read == nil {
			k.read = &Reading{ReadAt: now}
		}
		k.read.Series++
		k.read.Value, k.read.SampledAt = s.value, s.at
		if _, ok := GaugeState(s.value); !ok {
			continue
		}
		if n := len(k.points); n > 0 && k.points[n-1].Time.Equal(bucket) {
			pt := &k.points[n-1]
			pt.Max, pt.Min, pt.Samples = math.Max(pt.Max, s.value), math.Min(pt.Min, s.value), pt.Samples+1
		} else {
			k.points = append(k.points, Point{Time: bucket, Max: s.value, Min: s.value, Samples: 1})
		}
		k.seen, k.last = now, s.value
	}
}

// prune drops points older than start, and forgets instances not read
// since start (their points are older still).
func (p *Prometheus) prune(start time.Time) {
	for dep, known := range p.fleet {
		for name, k := range known {
			if k.present.Before(start) {
				delete(known, name)
				continue
			}
			i := 0
			for i < len(k.points) && k.points[i].Time.Before(start) {
				i++
			}
			k.points = k.points[i:]
		}
		if len(known) == 0 {
			delete(p.fleet, dep)
		}
	}
}

// scrape reads one target and returns its kosha_breaker_state samples.
func (p *Prometheus) scrape(ctx context.Context, target string) ([]sample, int, error) {
	var out []sample
	skipped := 0 // samples that are not a state of a named dependency
	err := p.scrapeFamily(ctx, target, gauge.PrometheusMetricName, func(s sample, ok bool) {
		if !ok || breaker.ValidateDependency(s.dependency) != nil {
			skipped++
			return
		}
		if _, state := GaugeState(s.value); !state {
			skipped++
		}
		out = append(out, s)
	})
	if err != nil {
		return nil, 0, err
	}
	return out, skipped, nil
}

// scrapeFamily reads one target and hands each sample of the metric family
// name to each ([toSample]), in the exposition's order.
func (p *Prometheus) scrapeFamily(ctx context.Context, target, name string, each func(s sample, ok bool)) error {
	host := hostOf(target)
	return scrapeTarget(ctx, p.opts.Client, target, []string{name}, func(mf *dto.MetricFamily) {
		for _, m := range mf.GetMetric() {
			each(toSample(m, host))
		}
	})
}

// scrapeAll reads every target at once: results[i] and errs[i] are
// urls[i]'s. A target that fails is left out while another answers; err
// joins every target's error when none does.
func scrapeAll[T any](urls []string, read func(url string) (T, error)) (results []T, errs []error, err error) {
	results, errs = make([]T, len(urls)), make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { results[i], errs[i] = read(u) })
	}
	wg.Wait()
	if !slices.Contains(errs, nil) {
		return results, errs, errors.Join(errs...)
	}
	return results, errs, nil
}

// errStrings is the text of each error of errs that is not nil, in order.
func errStrings(errs []error) []string {
	var out []string
	for _, err := range errs {
		if err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// scrapeTarget reads one target with client (no redirect followed, the
// body capped at [maxScrapeBytes]) and hands each metric family named in
// names to each, in the exposition's order.
func scrapeTarget(ctx context.Context, client *http.Client, target string, names []string, each func(*dto.MetricFamily)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("scrape %s: %w", target, err)
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("scrape %s: %w", target, ctx.Err())
		}
		return fmt.Errorf("scrape %s: %w: %w", target, ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		if loc, ok := nofollow.Redirected(resp); ok {
			return redirectError(target, resp.Status, loc)
		}
		return fmt.Errorf("scrape %s: %w: HTTP %s", target, ErrUnavailable, resp.Status)
	}
	format := expfmt.ResponseFormat(resp.Header)
	if format == expfmt.FmtUnknown {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	if resp.ContentLength > maxScrapeBytes {
		return tooLargeError(target, resp.ContentLength, names)
	}
	// The body is read whole before it is parsed: one over the cap is
	// refused as too large, never parsed as far as the cap cut it (which
	// failed as a parse error of the cut line, after parsing 16 MiB).
	raw, over, err := readCapped(resp.Body, maxScrapeBytes)
	switch {
	case over:
		return tooLargeError(target, -1, names)
	case err != nil:
		if ctx.Err() != nil {
			return fmt.Errorf("scrape %s: %w", target, ctx.Err())
		}
		return fmt.Errorf("scrape %s: %w: read the answer: %w", target, ErrUnavailable, err)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(raw), format)
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("scrape %s: %w: parse metrics: %w", target, ErrUnavailable, err)
		}
		if slices.Contains(names, mf.GetName()) {
			each(&mf)
		}
	}
}

// toSample reads one gauge (or untyped) sample, whatever its value and
// whether or not it names a dependency; the instance defaults to the
// target's host:port, as Prometheus itself labels a target. ok is false for
// a sample of another type.
func toSample(m *dto.Metric, host string) (s sample, ok bool) {
	s.instance = host
	if m.TimestampMs != nil {
		s.at = time.UnixMilli(m.GetTimestampMs())
	}
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case gauge.DimDependency:
			s.dependency = l.GetValue()
		case gauge.DimInstance:
			if l.GetValue() != "" {
				s.instance = l.GetValue()
			}
		}
	}
	switch {
	case m.GetGauge() != nil:
		s.value = m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		s.value = m.GetUntyped().GetValue()
	default:
		return s, false
	}
	return s, true
}

// redirectError is a scrape answered with a redirect: not followed (the
// answer could stand in another server's gauges), named with its fix.
func redirectError(target, status, location string) error {
	where := "elsewhere"
	if location != "" {
		where = "to " + textsafe.Line(location)
	}
	return fmt.Errorf("scrape %s: %w: it redirects (HTTP %s) %s, and koshactl follows no redirect of a metrics endpoint: "+
		"give the URL that serves the metrics itself (--metrics-url, or the context's metrics.prometheus.url)", target, ErrUnavailable, status, where)
}

// readCapped reads r whole when it holds at most limit bytes; over reports
// that it held more (what was read is then dropped).
func readCapped(r io.Reader, limit int64) (b []byte, over bool, err error) {
	b, err = io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(b)) > limit {
		return nil, true, nil
	}
	return b, false, err
}

// tooLargeError is a scrape whose body is longer than [maxScrapeBytes]
// (size is its announced length, or -1 when it only went past the cap): it
// names the cap and what to scrape instead, the metric families read.
func tooLargeError(target string, size int64, names []string) error {
	what := "more than"
	if size >= 0 {
		what = fmt.Sprintf("%.1f MiB, more than", float64(size)/(1<<20))
	}
	return fmt.Errorf("scrape %s: %w: the answer is too large (%s the %d MiB koshactl reads of one scrape): "+
		"point the metrics URL at an endpoint that serves fewer series, such as the fleet's own /metrics per instance "+
		"or a Prometheus server's /federate?match[]=%s (--metrics-url, or the context's metrics.prometheus.url)",
		target, ErrUnavailable, what, maxScrapeBytes>>20, strings.Join(names, "&match[]="))
}

func hostOf(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	return u.Host
}
