package exposition_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kosha-platform/koshactl/internal/dataplane/exposition"
)

const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// reply is a response of the handler.
type reply struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// scrape serves reg to a request with headers.
func scrape(t *testing.T, reg *exposition.Registry, headers map[string]string) reply {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, req)
	return reply{StatusCode: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// decode parses a response's body in the format its Content-Type names.
func decode(t *testing.T, resp reply) []*dto.MetricFamily {
	t.Helper()
	var body io.Reader = bytes.NewReader(resp.Body)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(body)
		if err != nil {
			t.Fatal(err)
		}
		body = gz
	}
	dec := expfmt.NewDecoder(body, expfmt.ResponseFormat(resp.Header))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("decode %s: %v", resp.Header.Get("Content-Type"), err)
		}
		out = append(out, mf)
	}
}

func text(t *testing.T, reg *exposition.Registry) string {
	t.Helper()
	return string(scrape(t, reg, nil).Body)
}

func TestGatherSortsLikeClientGolang(t *testing.T) {
	t.Parallel()
	reg := exposition.NewRegistry()
	calls := exposition.NewCounterVec("z_calls_total", "Calls.", "tool", "outcome") // declared out of name order
	unused := exposition.NewCounterVec("m_unused_total", "Never used.", "x")
	plain := exposition.NewCounter("a_plain_total", "Plain.")
	if err := reg.Register(calls, unused, plain); err != nil {
		t.Fatal(err)
	}
	calls.WithLabelValues("search", "ok").Inc()
	calls.WithLabelValues("screen", "error").Inc()
	calls.WithLabelValues("search", "error").Inc()
	calls.WithLabelValues("search", "error").Inc()
	want := `# HELP a_plain_total Plain.
# TYPE a_plain_total counter
a_plain_total 0
# HELP z_calls_total Calls.
# TYPE z_calls_total counter
z_calls_total{outcome="error",tool="screen"} 1
z_calls_total{outcome="error",tool="search"} 2
z_calls_total{outcome="ok",tool="search"} 1
`
	if got := text(t, reg); got != want {
		t.Errorf("text:\n%s\nwant (families by name, labels by name, series by values, empty families left out):\n%s", got, want)
	}
}

func TestCountersAreSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	reg := exposition.NewRegistry()
	vec := exposition.NewCounterVec("hits_total", "Hits.", "worker")
	plain := exposition.NewCounter("all_total", "All.")
	h := exposition.NewHistogramVec("lat_seconds", "Latency.", []float64{1, 2}, "worker")
	if err := reg.Register(vec, plain, h); err != nil {
		t.Fatal(err)
	}
	const workers, n = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range n {
				vec.WithLabelValues([]string{"even", "odd"}[w%2]).Inc()
				plain.Inc()
				h.WithLabelValues("all").Observe(float64(i % 3))
				if i%100 == 0 {
					if _, err := reg.Gather(); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if got := vec.WithLabelValues("even").Value() + vec.WithLabelValues("odd").Value(); got != workers*n {
		t.Errorf("vector total %v, want %d", got, workers*n)
	}
	if got := plain.Value(); got != workers*n {
		t.Errorf("counter %v, want %d", got, workers*n)
	}
	fams := decode(t, scrape(t, reg, nil))
	hist := fams[slices.IndexFunc(fams, func(mf *dto.MetricFamily) bool { return mf.GetName() == "lat_seconds" })]
	if c := hist.Metric[0].GetHistogram().GetSampleCount(); c != workers*n {
		t.Errorf("histogram count %d, want %d", c, workers*n)
	}
}

func TestHistogramBucketsAreInclusiveAndCumulative(t *testing.T) {
	t.Parallel()
	reg := exposition.NewRegistry()
	h := exposition.NewHistogramVec("d_seconds", "D.", []float64{.5, 1, math.Inf(+1)}, "tool")
	if err := reg.Register(h); err != nil {
		t.Fatal(err)
	}
	h.WithLabelValues("b") // exists empty from the start
	for _, v := range []float64{0.25, 0.5, 0.75, 1, 7} {
		h.WithLabelValues("a").Observe(v)
	}
	want := `# HELP d_seconds D.
# TYPE d_seconds histogram
d_seconds_bucket{tool="a",le="0.5"} 2
d_seconds_bucket{tool="a",le="1"} 4
d_seconds_bucket{tool="a",le="+Inf"} 5
d_seconds_sum{tool="a"} 9.5
d_seconds_count{tool="a"} 5
d_seconds_bucket{tool="b",le="0.5"} 0
d_seconds_bucket{tool="b",le="1"} 0
d_seconds_bucket{tool="b",le="+Inf"} 0
d_seconds_sum{tool="b"} 0
d_seconds_count{tool="b"} 0
`
	if got := text(t, reg); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
}

func TestInvalidNamesPanic(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(){
		"metric name with a dash":  func() { exposition.NewCounter("kosha-calls", "H.") },
		"metric name from a digit": func() { exposition.NewCounterVec("1calls", "H.", "a") },
		"empty metric name":        func() { exposition.NewGaugeDesc("", "H.") },
		"no help":                  func() { exposition.NewCounter("calls_total", "") },
		"label name with a dot":    func() { exposition.NewCounterVec("calls_total", "H.", "a.b") },
		"label name from a digit":  func() { exposition.NewCounterDesc("calls_total", "H.", "1a") },
		"reserved label name":      func() { exposition.NewCounterVec("calls_total", "H.", "__name") },
		"label declared twice":     func() { exposition.NewCounterVec("calls_total", "H.", "a", "a") },
		"le on a histogram":        func() { exposition.NewHistogramVec("d_seconds", "H.", []float64{1}, "le") },
		"no buckets":               func() { exposition.NewHistogramVec("d_seconds", "H.", nil) },
		"unsorted buckets":         func() { exposition.NewHistogramVec("d_seconds", "H.", []float64{2, 1}) },
		"repeated bucket":          func() { exposition.NewHistogramVec("d_seconds", "H.", []float64{1, 1}) },
		"NaN bucket":               func() { exposition.NewHistogramVec("d_seconds", "H.", []float64{math.NaN()}) },
		"too few label values":     func() { exposition.NewCounterVec("calls_total", "H.", "a", "b").WithLabelValues("x") },
		"too many label values": func() {
			exposition.NewHistogramVec("d_seconds", "H.", []float64{1}, "a").WithLabelValues("x", "y")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Error("built without a panic")
				}
			}()
			build()
		})
	}
	// The valid neighbors of the cases above build.
	exposition.NewCounterVec("kosha:calls_total", "H.", "_a", "B9")
	exposition.NewHistogramVec("d_seconds", "H.", []float64{1}, "lee").WithLabelValues("x")
}

func TestRegisteringANameTwiceIsAnError(t *testing.T) {
	t.Parallel()
	reg := exposition.NewRegistry()
	if err := reg.Register(exposition.NewCounter("a_total", "A.")); err != nil {
		t.Fatal(err)
	}
	err := reg.Register(exposition.NewCounter("b_total", "B."), exposition.NewCounterVec("a_total", "Again.", "x"))
	if err == nil || !strings.Contains(err.Error(), "a_total is registered twice") {
		t.Errorf("second a_total: %v", err)
	}
	if err := reg.Register(exposition.NewCounter("c_total", "C."), exposition.NewCounter("c_total", "C.")); err == nil {
		t.Error("c_total twice in one call registered")
	}
	gauge := exposition.NewGaugeDesc("a_total", "Clash.")
	if err := reg.Register(exposition.NewFunc(func(exposition.Emit) {}, gauge)); err == nil {
		t.Error("a scrape-time family named a_total registered")
	}
	// A refused call registers none of its collectors: b_total is free.
	if err := reg.Register(exposition.NewCounter("b_total", "B.")); err != nil {
		t.Errorf("b_total after the refused call: %v", err)
	}
}

// hostile are label values an attacker could choose: the text format's
// quotes, escapes and line breaks, and invalid UTF-8.
var hostile = []string{
	`say "hi"`, `back\slash`, `trailing\`, "two\nlines", "cr\rlf", "\xff\xfe not utf-8", `a="b"} 1` + "\nx_total 9",
	"", "# HELP x_total y", "ünïcødé ✓",
}

func TestHostileLabelValuesRoundTrip(t *testing.T) {
	t.Parallel()
	reg := exposition.NewRegistry()
	vec := exposition.NewCounterVec("hostile_total", "Values from outside.", "v")
	gauge := exposition.NewGaugeDesc("hostile_gauge", "Values from outside, at scrape time.", "v", "i")
	fn := exposition.NewFunc(func(emit exposition.Emit) {
		for i, v := range hostile {
			emit(gauge, float64(i), v, "x")
		}
	}, gauge)
	if err := reg.Register(vec, fn); err != nil {
		t.Fatal(err)
	}
	for i, v := range hostile {
		for range i + 1 {
			vec.WithLabelValues(v).Inc()
		}
	}
	want := map[string]float64{}
	for i, v := range hostile {
		want[strings.ToValidUTF8(v, "\uFFFD")] = float64(i)
	}
	for _, accept := range []string{"", protoAccept} {
		resp := scrape(t, reg, map[string]string{"Accept": accept})
		fams := decode(t, resp)
		if len(fams) != 2 {
			t.Fatalf("Accept %q: %d families, want hostile_gauge and hostile_total", accept, len(fams))
		}
		for _, mf := range fams {
			got := map[string]float64{}
			for _, m := range mf.Metric {
				v := m.GetCounter().GetValue() - 1
				if mf.GetName() == "hostile_gauge" {
					v = m.GetGauge().GetValue()
				}
				got[m.Label[len(m.Label)-1].GetValue()] = v
			}
			if len(got) != len(want) {
				t.Errorf("Accept %q: %s has %d series, want %d: %v", accept, mf.GetName(), len(got), len(want), got)
			}
			for v, n := range want {
				if g, ok := got[v]; !ok || g != n {
					t.Errorf("Accept %q: %s{v=%q} = %v (present %v), want %v", accept, mf.GetName(), v, g, ok, n)
				}
			}
		}
	}
	// The text parser reads exactly these families: no value broke out of
	// its quotes into a line of its own.
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text(t, reg)))
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 2 || fams["hostile_total"] == nil || fams["hostile_gauge"] == nil {
		t.Errorf("text parser found families %v", slices.Collect(maps.Keys(fams)))
	}
}

func TestScrapeTimeCollectorMistakesFailTheScrape(t *testing.T) {
	t.Parallel()
	declared := exposition.NewGaugeDesc("declared", "D.", "a")
	other := exposition.NewGaugeDesc("other", "O.")
	for name, fn := range map[string]func(exposition.Emit){
		"undeclared family":   func(emit exposition.Emit) { emit(other, 1) },
		"too few values":      func(emit exposition.Emit) { emit(declared, 1) },
		"series twice":        func(emit exposition.Emit) { emit(declared, 1, "x"); emit(declared, 2, "x") },
		"same after UTF-8ing": func(emit exposition.Emit) { emit(declared, 1, "\xff"); emit(declared, 2, "\xfe") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reg := exposition.NewRegistry()
			if err := reg.Register(exposition.NewFunc(fn, declared)); err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Gather(); err == nil {
				t.Error("gathered without an error")
			}
			if resp := scrape(t, reg, nil); resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("HTTP %d, want 500", resp.StatusCode)
			}
		})
	}
}

func TestHandlerNegotiatesFormatAndCompression(t *testing.T) {
	t.Parallel()
	reg := exposition.NewRegistry()
	c := exposition.NewCounter("n_total", "N.")
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	c.Inc()
	for _, tc := range []struct {
		accept, encoding, wantType string
		wantGzip                   bool
	}{
		{"", "", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", false},
		{"text/plain", "gzip", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", true},
		{protoAccept, "br, gzip;q=0.5", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores", true},
		{"", "gzip;q=0", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", false},
		{"", "*", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", true},
		{"", "identity", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", false},
	} {
		resp := scrape(t, reg, map[string]string{"Accept": tc.accept, "Accept-Encoding": tc.encoding})
		if ct := resp.Header.Get("Content-Type"); ct != tc.wantType {
			t.Errorf("Accept %q: Content-Type %q, want %q", tc.accept, ct, tc.wantType)
		}
		if gz := resp.Header.Get("Content-Encoding") == "gzip"; gz != tc.wantGzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", tc.encoding, gz, tc.wantGzip)
		}
		if v := resp.Header.Values("Vary"); !slices.Equal(v, []string{"Accept", "Accept-Encoding"}) {
			t.Errorf("Vary %q", v)
		}
		fams := decode(t, resp)
		if len(fams) != 1 || fams[0].Metric[0].GetCounter().GetValue() != 1 {
			t.Errorf("Accept %q, Accept-Encoding %q: decoded %v", tc.accept, tc.encoding, fams)
		}
	}
}
