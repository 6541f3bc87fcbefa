package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Deps are what steps act on. The command builds them from the
// resolved context; tests pass fakes or a temporary store. A nil service
// makes the steps that need it fail with a message naming it.
type Deps struct {
	// Clock stamps the journal and computes remaining time; nil means the
	// wall clock.
	Clock clock.Clock
	// ContextName and StoreDescription name what the drill acts on.
	ContextName      string
	StoreDescription string
	// Actor is who acts, for audit records and override items.
	Actor string
	// Levers moves the context's levers, of every kind it has (the run
	// binds its records: [RunContext.Levers]); a lever step reads through
	// its kind ([Kind]).
	Levers *lever.Service
	// KnownDependencies are the context's dependencies; breaker steps
	// refuse others unless allow_unknown is set. Empty accepts any.
	KnownDependencies []string
	// Audit records every change a drill makes.
	Audit audit.Appender
	// Minter mints chaos headers.
	Minter MinterAPI
	// Gauges reads breaker_state gauges.
	Gauges GaugeReader
	// Alarms reads CloudWatch alarms (alarm conditions).
	Alarms AlarmAPI
	// HTTP sends the http steps' and conditions' requests.
	HTTP HTTPDoer
	// LookupEnv reads ${env.NAME}; nil means no environment (every
	// reference needs a default).
	LookupEnv func(string) (string, bool)
	// Environ is the base environment of shell steps; nil means none
	// beyond the drill's variables.
	Environ []string
}

// Kind is the context's lever kind named name, as the K it is; the error
// names the store the steps need when the run has no lever service.
func Kind[K lever.Kind](d *Deps, name string) (K, error) {
	var zero K
	if d.Levers == nil || d.Audit == nil {
		return zero, NeedService(false, "store")
	}
	k, err := d.Levers.Kinds().Kind(name)
	if err != nil {
		return zero, err
	}
	out, ok := k.(K)
	if !ok {
		return zero, fmt.Errorf("lever kind %q is a %T (a wiring bug)", name, k)
	}
	return out, nil
}

// MinterAPI mints chaos headers; *chaos.Minter implements it.
type MinterAPI interface {
	Mint(ctx context.Context, req chaos.MintRequest) (*chaos.Minted, error)
}

var _ MinterAPI = (*chaos.Minter)(nil)

// AlarmAPI reads CloudWatch alarms; *metrics.AlarmSource implements it.
type AlarmAPI interface {
	// Describe reads q's alarms in region ("" for the default) with one
	// DescribeAlarms call.
	Describe(ctx context.Context, region string, q metrics.AlarmQuery) (metrics.AlarmRead, error)
	// DefaultRegion is where alarms are read unless a condition names a region.
	DefaultRegion(ctx context.Context) (string, error)
}

var _ AlarmAPI = (*metrics.AlarmSource)(nil)

// HTTPDoer sends HTTP requests; *http.Client implements it.
type HTTPDoer interface {
	Do(req *http.Request) (*http.Response, error)
}

var _ HTTPDoer = (*http.Client)(nil)

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 10

// NewHTTPClient returns the client drills send requests with. It follows a
// redirect only to the same scheme and host: an answer never sends the
// request, with its headers (a chaos header, an API key), somewhere else;
// the 3xx response is the answer instead.
func NewHTTPClient() *http.Client {
	return &http.Client{CheckRedirect: sameOriginRedirect}
}

func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// GaugeReader reads the current breaker_state of a dependency's instances.
type GaugeReader interface {
	// Read returns every instance reporting dependency now.
	Read(ctx context.Context, dependency string) (GaugeReading, error)
	// Describe names the source ("prometheus http://...").
	Describe() string
}

// GaugeReading is one read of a dependency's gauges.
type GaugeReading struct {
	Instances []InstanceGauge
}

// InstanceGauge is one instance's current breaker state.
type InstanceGauge struct {
	Instance string
	State    gauge.State
}

// MetricsGauges reads gauges through internal/metrics. Each read builds a
// fresh source with New, so a Prometheus scrape reports the instant's
// values rather than the worst value of the current minute.
type MetricsGauges struct {
	// New builds the source.
	New func(ctx context.Context) (metrics.GaugeSource, error)
	// Name describes the source.
	Name string
	// Hint, when set, is the fix for the source not answering (for the
	// sandbox's endpoint: is the sandbox running?).
	Hint string
}

var _ GaugeReader = (*MetricsGauges)(nil)

// gaugeWindow is the window asked of the source: a few periods, so a
// CloudWatch source (whose data lags a minute or two) has a newest point.
const gaugeWindow = 5 * time.Minute

// Describe implements GaugeReader.
func (g *MetricsGauges) Describe() string { return g.Name }

// Read implements GaugeReader: the newest point of each instance that is
// still reporting (the worst value of its newest period).
func (g *MetricsGauges) Read(ctx context.Context, dependency string) (GaugeReading, error) {
	src, err := g.New(ctx)
	if err != nil {
		return GaugeReading{}, fmt.Errorf("read breaker gauges: %w", err)
	}
	// A drill checks instances one by one: ask for the breakdown too.
	snap, err := src.Fetch(ctx, metrics.FetchRequest{Dependencies: []string{dependency}, Window: gaugeWindow, Instances: []string{dependency}})
	if err != nil {
		err = fmt.Errorf("read breaker gauges from %s: %w", src.Describe(), err)
		if g.Hint != "" && errors.Is(err, metrics.ErrUnavailable) {
			err = WithFix(err, nil, g.Hint)
		}
		return GaugeReading{}, err
	}
	var out GaugeReading
	add := func(instance string, p metrics.Point) {
		if st, ok := metrics.GaugeState(p.Max); ok {
			out.Instances = append(out.Instances, InstanceGauge{Instance: instance, State: st})
		}
	}
	series := snap.Series[dependency]
	for _, in := range series.Instances {
		if p, ok := in.Latest(); ok && snap.FetchedAt.Sub(in.LastSeen) <= snap.StaleAfter+snap.Period {
			add(in.Instance, p)
		}
	}
	if p, ok := series.Latest(); ok && len(series.Instances) == 0 {
		add("fleet", p)
	}
	return out, nil
}

// ErrNoService reports a step that needs a service the run does not have.
var ErrNoService = exitcode.New(exitcode.Usage, "service not available")

// NeedService returns nil when ok, or an [ErrNoService] error naming what
// the run lacks.
func NeedService(ok bool, what string) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%w: this run has no %s", ErrNoService, what)
}

// PrometheusGauges returns a GaugeReader scraping url (a drill's
// metrics_url) with doer.
func PrometheusGauges(url string, doer HTTPDoer, clk clock.Clock) GaugeReader {
	client, ok := doer.(*http.Client)
	if !ok {
		client = &http.Client{Transport: doerTransport{doer}}
	}
	return &MetricsGauges{Name: "prometheus " + url, Hint: metrics.URLHint(url), New: func(context.Context) (metrics.GaugeSource, error) {
		return metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Client: client, Clock: clk})
	}}
}

// doerTransport adapts an HTTPDoer to an http.RoundTripper.
type doerTransport struct{ d HTTPDoer }

func (t doerTransport) RoundTrip(req *http.Request) (*http.Response, error) { return t.d.Do(req) }

// GaugeSourcer is implemented by a [GaugeReader] that can hand out the
// metrics source it reads ([MetricsGauges] does): the breaker steps' wait
// option polls it with metrics.Waiter, the rule and bound of `koshactl
// breaker force-open --wait`.
type GaugeSourcer interface {
	Source(ctx context.Context) (metrics.GaugeSource, error)
}

var _ GaugeSourcer = (*MetricsGauges)(nil)

// FleetError is the failure of a breaker step whose wait for the fleet
// ended unconfirmed; the runner records its Fleet on the step.
type FleetError struct {
	Fleet *drill.FleetRecord
	Err   error
}

func (e *FleetError) Error() string { return e.Err.Error() }
func (e *FleetError) Unwrap() error { return e.Err }

// Source implements GaugeSourcer.
func (g *MetricsGauges) Source(ctx context.Context) (metrics.GaugeSource, error) { return g.New(ctx) }

// SourcerOf returns the [GaugeSourcer] behind r, looking through readers
// that wrap another (an Unwrap() GaugeReader method, as the runner's
// journaling reader has).
func SourcerOf(r GaugeReader) (GaugeSourcer, bool) {
	for r != nil {
		if gs, ok := r.(GaugeSourcer); ok {
			return gs, true
		}
		u, ok := r.(interface{ Unwrap() GaugeReader })
		if !ok {
			break
		}
		r = u.Unwrap()
	}
	return nil, false
}
