package scalebench_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"
)

// maxReadRoundTrips is the goal: every read command answers in at
// most three round trips to the store at 50 ms RTT.
const maxReadRoundTrips = 3

// The links' round trips. The benchmarks, which report times besides
// counts, use timedRTT, the link docs/benchmarks states. The tests that
// hold commands to their counts use countedRTT: [waves] counts a request
// that leaves while none is in flight as a new round trip, so on a loaded
// machine (-race, two busy cores) a request sent beside another but
// scheduled more than a round trip late would count as one of its own.
// The wider link leaves such a request 250 ms to leave, and takes nothing
// from what the counts prove: a request that depends on an answer cannot
// leave before the answer is back, whatever the link's latency.
const (
	timedRTT   = 50 * time.Millisecond
	countedRTT = 250 * time.Millisecond
)

// waves sits in front of the latency links and counts the requests sent
// and the round trips they took: a round trip starts when a request leaves
// while none is in flight. Requests sent together (in parallel) overlap on
// the link, so they cost one round trip between them, which is what a
// user waits for; sequential requests cost one each. It may front several
// upstreams (the store, and a gauge endpoint: [waves.also]); their
// requests count in the same waves.
type waves struct {
	url string

	mu                  sync.Mutex
	inflight            int
	requests, roundTrip int
}

func newWaves(tb testing.TB, upstream string) *waves {
	tb.Helper()
	w := &waves{}
	w.url = w.also(tb, upstream)
	return w
}

// also fronts another upstream with w's counts, and returns its address.
func (w *waves) also(tb testing.TB, upstream string) string {
	tb.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		tb.Fatal(err)
	}
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
	return "http://" + ln.Addr().String()
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

// read is one operator read of the round-trip tests and benchmarks: the
// requests and round trips it may take through the link, and the
// exit code it ends with.
type read struct {
	name string
	args []string
	code int
	// maxRequests and maxRounds bound the read; zero maxRounds means
	// [maxReadRoundTrips], zero maxRequests no bound.
	maxRequests, maxRounds int
	// sparse runs the read on the log whose only record is an hour old
	// (the table [sparseLog] loads), not the loaded table.
	sparse bool
}

// readCommands are the operator reads held to their bounds; metrics is a
// Prometheus endpoint (behind the link, its requests counted with the
// store's), levers a levers file for diff.
func readCommands(metrics, levers string) []read {
	return []read{
		{name: "breaker-list", args: []string{"breaker", "list"}, maxRounds: 1, maxRequests: 2},
		{name: "breaker-get", args: []string{"breaker", "get", "openai"}, maxRounds: 1, maxRequests: 1},
		{name: "breaker-status", args: []string{"breaker", "status", "--metrics-url", metrics}, maxRounds: 1, maxRequests: 3},
		// diff exits 1: the table's openai override is an unplanned one.
		{name: "levers-diff-no-gauges", args: []string{"diff", "-f", levers, "--no-gauges"}, code: 0, maxRounds: 1, maxRequests: 2},
		// The fleet's freeze rides the overrides' batch read, with the
		// gauges or without.
		{name: "levers-diff", args: []string{"diff", "-f", levers, "--metrics-url", metrics}, code: 0, maxRounds: 1, maxRequests: 3},
		{name: "ratelimit-get", args: []string{"ratelimit", "get", "client-000001"}},
		{name: "ratelimit-list", args: []string{"ratelimit", "list"}},
		// A listing by time reads the lists index's partition, the table's
		// policy beside it; by subject or actor, three ranges of one
		// partition (one per record prefix), the policy beside them.
		{name: "audit-list", args: []string{"audit", "list"}, maxRounds: 1, maxRequests: 2},
		{name: "audit-list-sparse-log", args: []string{"audit", "list"}, maxRounds: 1, maxRequests: 2, sparse: true},
		{name: "audit-since-1h", args: []string{"audit", "list", "--since", "1h"}, maxRounds: 1, maxRequests: 2},
		{name: "audit-since-7d", args: []string{"audit", "list", "--since", "168h"}, maxRounds: 1, maxRequests: 2},
		{name: "audit-subject", args: []string{"audit", "list", "--subject", "breaker#openai"}, maxRounds: 1, maxRequests: 4},
		{name: "audit-list-empty-window", args: []string{"audit", "list", "--actor", "nobody@nowhere"}, maxRounds: 1, maxRequests: 4},
		{name: "request-list", args: []string{"request", "list"}, maxRounds: 2, maxRequests: 3},
		{name: "request-list-all", args: []string{"request", "list", "--all"}, maxRounds: 2, maxRequests: 3},
	}
}

// gauges serves one gauge of openai for breaker status and diff, behind a
// link of rtt fronted by w.
func gauges(tb testing.TB, w *waves, rtt time.Duration) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, `kosha_breaker_state{dependency="openai",instance="gw-1"} 0`)
	}))
	tb.Cleanup(srv.Close)
	return w.also(tb, latencyLink(tb, srv.URL, rtt)) + "/metrics"
}

// leversFile writes the levers file diff compares: one weekly window of
// postgres, not in force now.
func leversFile(tb testing.TB) string {
	path := tb.TempDir() + "/levers.yaml"
	if err := os.WriteFile(path, []byte("version: 1\ncontext: dev\nwindows:\n  - {dependency: postgres, reason: bench, start: 2026-01-01T00:00:00Z, duration: 1h, repeat: weekly}\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// within reports how r's counts break its bounds, or "".
func (r read) within(requests, rounds int) string {
	maxRounds := r.maxRounds
	if maxRounds == 0 {
		maxRounds = maxReadRoundTrips
	}
	if rounds > maxRounds || (r.maxRequests > 0 && requests > r.maxRequests) {
		return fmt.Sprintf("%d requests in %d round trips, want at most %d in %d", requests, rounds, r.maxRequests, maxRounds)
	}
	return ""
}

// roundTrips runs each read once through a [countedRTT] link and returns
// its requests and round trips.
func roundTrips(tb testing.TB, buckets int, run func(r read, requests, roundTrips int)) {
	links := map[bool]*waves{}
	var metrics string
	for _, sparse := range []bool{false, true} {
		t := loaded(tb, buckets)
		if sparse {
			t = sparseLog(tb)
		}
		links[sparse] = newWaves(tb, latencyLink(tb, t.counter.url, countedRTT))
		if !sparse {
			metrics = gauges(tb, links[sparse], countedRTT)
		}
	}
	levers := leversFile(tb)
	for _, r := range readCommands(metrics, levers) {
		t, w := loaded(tb, buckets), links[r.sparse]
		if r.sparse {
			t = sparseLog(tb)
		}
		e := cli(tb, w.url, t.name)
		w.reset()
		if res := e.Run(r.args...); res.Code != r.code {
			tb.Fatalf("%v: exit %d: %s", r.args, res.Code, res.Stderr)
		}
		requests, rts := w.counts()
		run(r, requests, rts)
	}
}

// TestReadRoundTrips holds every read command to its bounds of requests and
// round trips to the store (and the gauges), on the empty table, on one
// with records spread over 90 days, and, for the default audit list, on a
// log whose only record is an hour old. It counts round trips, not time,
// through a [countedRTT] link.
func TestReadRoundTrips(t *testing.T) {
	for _, buckets := range []int{0, 400} {
		roundTrips(t, buckets, func(r read, requests, rts int) {
			t.Logf("buckets=%d %s: %d requests in %d round trips", buckets, r.name, requests, rts)
			if msg := r.within(requests, rts); msg != "" {
				t.Errorf("buckets=%d %s: %s", buckets, r.name, msg)
			}
		})
	}
}

// BenchmarkReadRoundTrips reports, for each read command through a 50 ms
// round-trip link, the requests it sent (requests/op) and the round trips
// they took (round-trips/op); a read over its bounds fails the benchmark
// (the count, not the time, is the goal).
func BenchmarkReadRoundTrips(b *testing.B) {
	levers := leversFile(b)
	for _, size := range sizes(b) {
		links := map[bool]*waves{}
		var metrics string
		for _, sparse := range []bool{false, true} {
			t := loaded(b, size)
			if sparse {
				t = sparseLog(b)
			}
			links[sparse] = newWaves(b, latencyLink(b, t.counter.url, timedRTT))
			if !sparse {
				metrics = gauges(b, links[sparse], timedRTT)
			}
		}
		for _, r := range readCommands(metrics, levers) {
			t, w := loaded(b, size), links[r.sparse]
			if r.sparse {
				t = sparseLog(b)
			}
			b.Run(fmt.Sprintf("%s/buckets=%d", r.name, size), func(b *testing.B) {
				e := cli(b, w.url, t.name)
				var requests, rts, n int
				for b.Loop() {
					w.reset()
					if res := e.Run(r.args...); res.Code != r.code {
						b.Fatalf("%v: exit %d: %s", r.args, res.Code, res.Stderr)
					}
					q, rt := w.counts()
					requests, rts, n = requests+q, max(rts, rt), n+1
				}
				b.ReportMetric(float64(requests)/float64(n), "requests/op")
				b.ReportMetric(float64(rts), "round-trips/op")
				if msg := r.within(requests/n, rts); msg != "" {
					b.Errorf("%s: %s", r.name, msg)
				}
			})
		}
	}
}

// BenchmarkBreakerListVersusGet runs `breaker list` and `breaker get
// openai` in turn through a 50 ms round-trip link, and reports each one's
// median and the ratio list/get (x-get): one round trip each, so the list
// costs about what the get does.
func BenchmarkBreakerListVersusGet(b *testing.B) {
	t := loaded(b, 0)
	w := newWaves(b, latencyLink(b, t.counter.url, timedRTT))
	e := cli(b, w.url, t.name)
	var list, get []time.Duration
	for b.Loop() {
		for _, args := range [][]string{{"breaker", "list"}, {"breaker", "get", "openai"}} {
			start := time.Now()
			if res := e.Run(args...); res.Code != 0 {
				b.Fatalf("%v: exit %d: %s", args, res.Code, res.Stderr)
			}
			if d := time.Since(start); args[1] == "list" {
				list = append(list, d)
			} else {
				get = append(get, d)
			}
		}
	}
	b.ReportMetric(float64(median(list))/float64(time.Millisecond), "list-median-ms")
	b.ReportMetric(float64(median(get))/float64(time.Millisecond), "get-median-ms")
	b.ReportMetric(float64(median(list))/float64(median(get)), "x-get")
}
