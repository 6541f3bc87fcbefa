package scalebench_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

// maxReadRoundTrips is the goal: every read command answers in at
// most three round trips to the store at 50 ms RTT.
const maxReadRoundTrips = 3

// waves sits in front of the latency link and counts the requests sent and
// the round trips they took: a round trip starts when a request leaves
// while none is in flight. Requests sent together (in parallel) overlap on
// a 50 ms link, so they cost one round trip between them, which is what a
// user waits for; sequential requests cost one each.
type waves struct {
	url string

	mu                  sync.Mutex
	inflight            int
	requests, roundTrip int
}

func newWaves(tb testing.TB, upstream string) *waves {
	tb.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	w := &waves{}
	// A request ends when its answer is back from the link, before the
	// answer is passed on: the client cannot send what depends on it
	// while the request still counts as in flight.
	done := func() {
		w.mu.Lock()
		w.inflight--
		w.mu.Unlock()
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(*http.Response) error { done(); return nil }
	rp.ErrorHandler = func(rw http.ResponseWriter, _ *http.Request, err error) {
		done()
		http.Error(rw, err.Error(), http.StatusBadGateway)
	}
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		if w.inflight == 0 {
			w.roundTrip++
		}
		w.inflight++
		w.requests++
		w.mu.Unlock()
		rp.ServeHTTP(rw, r)
	})
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	w.url = "http://" + ln.Addr().String()
	return w
}

func (w *waves) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests, w.roundTrip = 0, 0
}

func (w *waves) counts() (requests, roundTrips int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests, w.roundTrip
}

// readCommands are the operator reads held to [maxReadRoundTrips]; metrics
// is a Prometheus endpoint for breaker status (its scrape is not a store
// round trip).
func readCommands(metrics string) []struct {
	name string
	args []string
} {
	return []struct {
		name string
		args []string
	}{
		{"breaker-list", []string{"breaker", "list"}},
		{"breaker-get", []string{"breaker", "get", "openai"}},
		{"breaker-status", []string{"breaker", "status", "--metrics-url", metrics}},
		{"ratelimit-get", []string{"ratelimit", "get", "client-000001"}},
		{"ratelimit-list", []string{"ratelimit", "list"}},
		{"audit-list", []string{"audit", "list"}},
		{"audit-since-1h", []string{"audit", "list", "--since", "1h"}},
		{"audit-since-7d", []string{"audit", "list", "--since", "168h"}},
		{"audit-subject", []string{"audit", "list", "--subject", "breaker#openai"}},
		{"audit-list-empty-window", []string{"audit", "list", "--actor", "nobody@nowhere"}},
		{"request-list", []string{"request", "list"}},
	}
}

// gauges serves one gauge of openai for breaker status.
func gauges(tb testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, `kosha_breaker_state{dependency="openai",instance="gw-1"} 0`)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// roundTrips runs each read once through a 50 ms link and returns its
// requests and round trips.
func roundTrips(tb testing.TB, buckets int, run func(name string, requests, roundTrips int)) {
	t := loaded(tb, buckets)
	w := newWaves(tb, latencyLink(tb, t.counter.url, 50*time.Millisecond))
	e := cli(tb, w.url, t.name)
	for _, r := range readCommands(gauges(tb)) {
		w.reset()
		if res := e.Run(r.args...); res.Code != 0 {
			tb.Fatalf("%v: exit %d: %s", r.args, res.Code, res.Stderr)
		}
		requests, rts := w.counts()
		run(r.name, requests, rts)
	}
}

// TestReadRoundTrips holds every read command to three round trips to the
// store at 50 ms RTT, on the empty table (the default audit list walks the
// whole retention there) and on one with records spread over 90 days. It
// counts round trips, not time.
func TestReadRoundTrips(t *testing.T) {
	for _, buckets := range []int{0, 400} {
		roundTrips(t, buckets, func(name string, requests, rts int) {
			t.Logf("buckets=%d %s: %d requests in %d round trips", buckets, name, requests, rts)
			if rts > maxReadRoundTrips {
				t.Errorf("buckets=%d %s: %d round trips (%d requests), want at most %d", buckets, name, rts, requests, maxReadRoundTrips)
			}
		})
	}
}

// BenchmarkReadRoundTrips reports, for each read command through a 50 ms
// round-trip link, the requests it sent (requests/op) and the round trips
// they took (round-trips/op); a read over three round trips fails the
// benchmark (the count, not the time, is the goal).
func BenchmarkReadRoundTrips(b *testing.B) {
	for _, size := range sizes(b) {
		t := loaded(b, size)
		w := newWaves(b, latencyLink(b, t.counter.url, 50*time.Millisecond))
		metrics := gauges(b)
		for _, r := range readCommands(metrics) {
			b.Run(fmt.Sprintf("%s/buckets=%d", r.name, size), func(b *testing.B) {
				e := cli(b, w.url, t.name)
				var requests, rts, n int
				for b.Loop() {
					w.reset()
					if res := e.Run(r.args...); res.Code != 0 {
						b.Fatalf("%v: exit %d: %s", r.args, res.Code, res.Stderr)
					}
					q, rt := w.counts()
					requests, rts, n = requests+q, max(rts, rt), n+1
				}
				b.ReportMetric(float64(requests)/float64(n), "requests/op")
				b.ReportMetric(float64(rts), "round-trips/op")
				if rts > maxReadRoundTrips {
					b.Errorf("%s: %d round trips, want at most %d", r.name, rts, maxReadRoundTrips)
				}
			})
		}
	}
}
