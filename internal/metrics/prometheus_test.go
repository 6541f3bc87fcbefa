package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// exposition serves whatever text it holds, as the sandbox's /metrics would.
type exposition struct {
	mu     sync.Mutex
	body   string
	status int
	hits   int
}

func (e *exposition) set(body string) {
	e.mu.Lock()
	e.body, e.status = body, http.StatusOK
	e.mu.Unlock()
}

func (e *exposition) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hits++
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(e.status)
	fmt.Fprint(w, e.body)
}

func serveMetrics(t *testing.T, body string) (*exposition, string) {
	t.Helper()
	e := &exposition{}
	e.set(body)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv.URL + "/metrics"
}

const sandboxText = `# HELP kosha_breaker_state Breaker state per dependency: 0 closed, 1 half-open, 2 open, 3 forced.
# TYPE kosha_breaker_state gauge
kosha_breaker_state{dependency="openai",instance="gw-1"} 2
kosha_breaker_state{dependency="openai",instance="gw-2"} 0
kosha_breaker_state{dependency="postgres",instance="gw-1"} 0
kosha_breaker_state{dependency="postgres",instance="gw-2"} 0
# HELP kosha_requests_total Unrelated counter.
# TYPE kosha_requests_total counter
kosha_requests_total{dependency="openai"} 1234
`

func TestPrometheusScrapesPerInstanceGauges(t *testing.T) {
	_, url := serveMetrics(t, sandboxText)
	clk := clocktest.NewFake(now)
	p, err := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai", "core-api"}, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Requests != 1 || len(snap.Warnings) != 0 {
		t.Errorf("requests %d warnings %q", snap.Requests, snap.Warnings)
	}
	got := metrics.Merge([]string{"openai", "core-api"}, nil, &snap, clk.Now())
	want := map[string]metrics.State{"core-api": metrics.NoData, "openai": metrics.Mixed, "postgres": metrics.Closed}
	if len(got) != 3 {
		t.Fatalf("statuses = %d, want 3 (asked-for, and discovered postgres)", len(got))
	}
	for _, st := range got {
		if st.State != want[st.Dependency] {
			t.Errorf("%s = %s, want %s", st.Dependency, st.State, want[st.Dependency])
		}
	}
	openai := got[1]
	if openai.Gauges.Max != 2 || openai.Gauges.Min != 0 || openai.Gauges.Reporting != 2 || openai.Gauges.ByState != [4]int{1, 0, 1, 0} {
		t.Errorf("openai gauges = %+v", openai.Gauges)
	}
	if openai.Instances[0].Instance != "gw-1" || openai.Instances[0].State != gauge.Open {
		t.Errorf("openai instances = %+v", openai.Instances)
	}
}

func TestPrometheusBuildsTheTimelineFromItsOwnScrapes(t *testing.T) {
	e, url := serveMetrics(t, sandboxText)
	clk := clocktest.NewFake(now)
	p, _ := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clk})
	fetch := func() metrics.Snapshot {
		t.Helper()
		snap, err := p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: nil, Window: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	fetch()
	clk.Advance(10 * time.Second) // same minute: values aggregate into one point
	e.set(strings.ReplaceAll(sandboxText, `dependency="openai",instance="gw-1"} 2`, `dependency="openai",instance="gw-1"} 0`))
	// The current value is the latest scrape's, not the minute's worst.
	if st := metrics.Merge(nil, nil, ptr(fetch()), clk.Now())[0]; st.GaugeState != metrics.Closed || st.Instances[0].Value != 0 {
		t.Errorf("after gw-1 closed: %s, gw-1 = %v", st.GaugeState, st.Instances[0].Value)
	}
	clk.Advance(time.Second)
	e.set(strings.ReplaceAll(sandboxText, `instance="gw-2"} 0`, `instance="gw-2"} 1`))
	fetch()
	clk.Advance(time.Minute)
	// gw-2 vanished from the scrape: it stops counting as reporting.
	e.set("kosha_breaker_state{dependency=\"openai\",instance=\"gw-1\"} 3\n")
	snap := fetch()

	s := snap.Series["openai"]
	if len(s.Timeline) != 2 {
		t.Fatalf("timeline = %+v, want 2 one-minute points", s.Timeline)
	}
	if p0 := s.Timeline[0]; p0.Max != 2 || p0.Min != 0 || p0.Samples != 6 {
		t.Errorf("first minute = %+v, want max 2, min 0 from 6 samples", p0)
	}
	if p0 := s.Instances[1].Points[0]; p0.Max != 1 || p0.Min != 0 || p0.Samples != 3 {
		t.Errorf("gw-2's first minute = %+v, want 0, 0 then 1 aggregated", p0)
	}
	if p1 := s.Timeline[1]; p1.Max != 3 || p1.Min != 3 || p1.Samples != 1 {
		t.Errorf("second minute = %+v", p1)
	}
	st := metrics.Merge(nil, nil, &snap, clk.Now())
	openai := st[0]
	if openai.Gauges.Reporting != 1 || openai.Gauges.Known != 2 || openai.GaugeState != metrics.Forced {
		t.Errorf("openai = %+v, want 1 of 2 instances reporting, forced", openai.Gauges)
	}
	if openai.Instances[1].Reporting {
		t.Error("gw-2 (absent from the last scrape) still counts as reporting")
	}
	// After the window, old points and silent instances are forgotten.
	clk.Advance(2 * time.Hour)
	e.set("")
	snap = fetch()
	if len(snap.Series) != 0 {
		t.Errorf("series after the window = %v", snap.Series)
	}
}

func TestPrometheusSkipsSamplesItCannotRead(t *testing.T) {
	_, url := serveMetrics(t, `kosha_breaker_state{dependency="openai",instance="gw-1"} 7
kosha_breaker_state{instance="gw-1"} 1
kosha_breaker_state{dependency="Not Valid",instance="gw-1"} 1
kosha_breaker_state{dependency="openai",instance="gw-2"} NaN
kosha_breaker_state{dependency="openai",instance="gw-3"} 1
`)
	p, _ := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clocktest.NewFake(now)})
	snap, err := p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: nil, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "4 kosha_breaker_state samples ignored") {
		t.Errorf("warnings = %q", snap.Warnings)
	}
	// gw-1 (7) and gw-2 (NaN) report no state: no points, nothing shown,
	// but they are there, with their reading, so they cannot confirm.
	in := snap.Series["openai"].Instances
	if len(in) != 3 || in[2].Instance != "gw-3" || len(in[2].Points) != 1 || len(in[0].Points) != 0 || len(in[1].Points) != 0 ||
		in[0].Newest == nil || in[0].Newest.Value != 7 || in[1].Newest == nil || !math.IsNaN(in[1].Newest.Value) {
		t.Errorf("instances = %+v, want gw-1 and gw-2 without points and gw-3 with one", in)
	}
	st := metrics.Merge(nil, nil, &snap, now)
	if len(st) != 1 || st[0].Gauges.Reporting != 1 || len(st[0].Instances) != 1 {
		t.Errorf("merged = %+v, want only gw-3 shown", st)
	}
}

func TestPrometheusDefaultsTheInstanceToTheTarget(t *testing.T) {
	_, url := serveMetrics(t, "kosha_breaker_state{dependency=\"openai\"} 0\n")
	p, _ := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clocktest.NewFake(now)})
	snap, err := p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: nil, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics")
	if in := snap.Series["openai"].Instances; len(in) != 1 || in[0].Instance != host {
		t.Errorf("instances = %+v, want %s", in, host)
	}
}

func TestPrometheusFailures(t *testing.T) {
	e, url := serveMetrics(t, sandboxText)
	p, _ := metrics.NewPrometheus([]string{url}, metrics.PrometheusOptions{Clock: clocktest.NewFake(now)})
	e.mu.Lock()
	e.status = http.StatusServiceUnavailable
	e.mu.Unlock()
	if _, err := p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: nil, Window: time.Hour}); !errors.Is(err, metrics.ErrUnavailable) || !strings.Contains(err.Error(), "503") {
		t.Errorf("503: %v", err)
	}
	e.set("kosha_breaker_state{dependency=\"openai\" 0\n")
	if _, err := p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: nil, Window: time.Hour}); !errors.Is(err, metrics.ErrUnavailable) || !strings.Contains(err.Error(), "parse metrics") {
		t.Errorf("garbage: %v", err)
	}
	// A closed port: refused.
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL + "/metrics"
	srv.Close()
	p2, _ := metrics.NewPrometheus([]string{dead}, metrics.PrometheusOptions{Clock: clocktest.NewFake(now)})
	if _, err := p2.Fetch(context.Background(), metrics.FetchRequest{Dependencies: nil, Window: time.Hour}); !errors.Is(err, metrics.ErrUnavailable) {
		t.Errorf("refused: %v", err)
	}
	// One of two targets down: data from the other, and a warning.
	e.set(sandboxText)
	p3, _ := metrics.NewPrometheus([]string{url, dead}, metrics.PrometheusOptions{Clock: clocktest.NewFake(now)})
	snap, err := p3.Fetch(context.Background(), metrics.FetchRequest{Dependencies: nil, Window: time.Hour})
	if err != nil {
		t.Fatalf("one target up: %v", err)
	}
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], dead) || len(snap.Series) != 2 {
		t.Errorf("warnings %q, series %d", snap.Warnings, len(snap.Series))
	}
}

func TestNewPrometheusValidatesURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8787/metrics", "ftp://x/metrics", "http:///metrics"} {
		if _, err := metrics.NewPrometheus([]string{u}, metrics.PrometheusOptions{}); !errors.Is(err, metrics.ErrInvalidSource) {
			t.Errorf("NewPrometheus(%q) = %v", u, err)
		}
	}
	if _, err := metrics.NewPrometheus(nil, metrics.PrometheusOptions{}); !errors.Is(err, metrics.ErrInvalidSource) {
		t.Errorf("no url: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// Issue 35: a 302 to another loopback port was followed (17 times, as far
// as the chain went), and its gauges judged. A scrape follows no redirect,
// whatever its client would do, and says what to fix.
func TestPrometheusRefusesRedirects(t *testing.T) {
	t.Parallel()
	other, otherURL := serveMetrics(t, sandboxText)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL, http.StatusFound)
	}))
	t.Cleanup(redirecting.Close)
	target := redirecting.URL + "/metrics"
	for name, client := range map[string]*http.Client{"default client": nil, "a client that follows redirects": {}} {
		p, err := metrics.NewPrometheus([]string{target}, metrics.PrometheusOptions{Client: client, Clock: clocktest.NewFake(now)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}})
		want := "scrape " + target + ": metrics source unavailable: it redirects (HTTP 302 Found) to " + otherURL +
			", and koshactl follows no redirect of a metrics endpoint: give the URL that serves the metrics itself"
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v\nwant %s…", name, err, want)
		}
	}
	other.mu.Lock()
	defer other.mu.Unlock()
	if other.hits != 0 {
		t.Errorf("the redirect's target was scraped %d times", other.hits)
	}
}

// Issue 45: a 19 MB scrape, over the 16 MiB cap, failed with "parse error in
// line 26388" (the line the cap cut). It says the answer is too large, names
// the cap and the fix, whether or not the server announced its length, and
// reads no series of a cut answer.
func TestPrometheusRefusesAnAnswerOverTheCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(sandboxText)
	for i := 0; b.Len() < 19_000_000; i++ {
		fmt.Fprintf(&b, "kosha_requests_total{dependency=\"openai\",instance=\"gw-%d\",route=\"/a/long/route/name/to/fill/the/line\"} %d\n", i, i)
	}
	body := b.String()
	for name, announce := range map[string]bool{"chunked": false, "with Content-Length": true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			if announce {
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			}
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		target := srv.URL + "/metrics"
		// 19 MB on a loaded machine under -race: the client's timeout is
		// the tests' bound, not a scrape's 5 s.
		p, err := metrics.NewPrometheus([]string{target}, metrics.PrometheusOptions{Clock: clocktest.NewFake(now),
			Client: &http.Client{Timeout: wait.Ceiling}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Fetch(context.Background(), metrics.FetchRequest{Dependencies: []string{"openai"}, Window: time.Hour})
		if !errors.Is(err, metrics.ErrUnavailable) {
			t.Fatalf("%s: %v, want unavailable", name, err)
		}
		msg := err.Error()
		for _, want := range []string{"too large", "16 MiB", "/federate?match[]=kosha_breaker_state", "--metrics-url"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q does not say %q", name, msg, want)
			}
		}
		if strings.Contains(msg, "parse") || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q reads as a parse error or spans lines", name, msg)
		}
		if announce && !strings.Contains(msg, "18.1 MiB") {
			t.Errorf("%s: %q does not give the announced size", name, msg)
		}
	}
}
