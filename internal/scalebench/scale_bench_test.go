package scalebench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Env100k opts in to the 100k-bucket table (loading it takes about a
// minute on a shared 2-core machine; see docs/benchmarks/scale.md).
const Env100k = "KOSHACTL_BENCH_100K"

// counter is a reverse proxy in front of moto that counts, from
// DynamoDB's own answers, the requests made and the items each examined:
// ScannedCount for Scan and Query, the items returned for BatchGetItem, one
// for a GetItem that found its item. It also sums the time moto took to
// answer (from the request's arrival to the answer's last byte).
type counter struct {
	requests, examined atomic.Int64
	// answering is the nanoseconds moto spent on the requests.
	answering atomic.Int64
	url       string

	mu sync.Mutex
	// ops counts the requests of each operation (the X-Amz-Target's), by
	// whether DynamoDB answered 200: "TransactWriteItems" and
	// "TransactWriteItems!" (any other status).
	ops map[string]int64
}

// newCounter counts the requests to upstream. moto's own requests pass one
// at a time already (internal/testutil/moto's front).
func newCounter(tb testing.TB, upstream string) *counter {
	tb.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	c := &counter{ops: map[string]int64{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		_ = r.Body.Close()
		if start, ok := r.Request.Context().Value(arrivedKey{}).(time.Time); ok {
			c.answering.Add(int64(time.Since(start)))
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		c.requests.Add(1)
		op := r.Request.Header.Get("X-Amz-Target")
		op = op[strings.LastIndexByte(op, '.')+1:]
		if r.StatusCode != http.StatusOK {
			op += "!"
		}
		c.mu.Lock()
		c.ops[op]++
		c.mu.Unlock()
		var out struct {
			ScannedCount *int64
			Item         map[string]any
			Responses    map[string][]any
		}
		if json.Unmarshal(body, &out) == nil {
			switch {
			case out.ScannedCount != nil:
				c.examined.Add(*out.ScannedCount)
			case out.Responses != nil:
				for _, items := range out.Responses {
					c.examined.Add(int64(len(items)))
				}
			case out.Item != nil:
				c.examined.Add(1)
			}
		}
		return nil
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	arrived := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), arrivedKey{}, time.Now())))
	})
	srv := &http.Server{Handler: arrived, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	// The counter serves its table for the whole binary (tables are loaded
	// once and shared by the benchmarks); TestMain closes it.
	closers = append(closers, srv.Close)
	c.url = "http://" + ln.Addr().String()
	return c
}

// arrivedKey is the context key of when the counter received a request.
type arrivedKey struct{}

func (c *counter) reset() {
	c.requests.Store(0)
	c.answering.Store(0)
	c.examined.Store(0)
	c.mu.Lock()
	clear(c.ops)
	c.mu.Unlock()
}

// op is how many requests of operation op were answered 200 since the
// last reset (op+"!" for the others).
func (c *counter) op(op string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// table is one loaded moto table behind a counter.
type table struct {
	endpoint string
	counter  *counter
	name     string
	loadTime time.Duration
	items    int
}

var (
	tablesMu sync.Mutex
	tables   = map[int]*table{}
	// server is the moto server every benchmark of the binary shares.
	server string
	// closers stop the counters when the binary ends.
	closers []func() error
)

func TestMain(m *testing.M) {
	ep, stop, err := moto.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server = ep
	code := m.Run()
	for _, c := range closers {
		_ = c()
	}
	stop()
	os.Exit(code)
}

// now is the benchmarks' clock: records older than 2 hours are before it.
var now = clitest.Epoch

// loaded returns a table with buckets rl# items and buckets/4 audit
// records spread over the 90 days before two hours ago (one in ten about
// breaker#openai), plus an override of openai, loading it on first use.
func loaded(b testing.TB, buckets int) *table {
	b.Helper()
	tablesMu.Lock()
	defer tablesMu.Unlock()
	if t, ok := tables[buckets]; ok {
		return t
	}
	name := fmt.Sprintf("scale-%d", buckets)
	s := dynamo.NewFromConfig(moto.Config(b, server), name)
	if _, err := s.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	items := make([]store.Item, 0, buckets+buckets/4)
	for i := range buckets {
		items = append(items, ratelimit.Bucket{Client: fmt.Sprintf("client-%06d", i), Tokens: 12.5,
			UpdatedAtMs: now.Add(-time.Duration(i%3600) * time.Second).UnixMilli()}.Item())
	}
	span := 90*24*time.Hour - 2*time.Hour
	for i := range buckets / 4 {
		at := now.Add(-2*time.Hour - span/time.Duration(max(buckets/4, 1))*time.Duration(i)).Truncate(time.Millisecond)
		subject := fmt.Sprintf("rl#client-%06d", i)
		if i%10 == 0 {
			subject = breaker.OverrideKey("openai")
		}
		items = append(items, audit.Record{ID: fmt.Sprintf("%016x", i), Time: at, Actor: "loader@bench", Action: "ratelimit.reset",
			Subject: subject, Context: "dev", Outcome: "ok"}.Item())
	}
	start := time.Now()
	dynamotest.PutBatch(b, moto.Config(b, server), name, items)
	t := &table{endpoint: server, name: name, loadTime: time.Since(start), items: len(items), counter: newCounter(b, server)}
	if _, _, err := levertest.Force(context.Background(), s, clocktest.NewFake(now), audit.NewLog(s, clocktest.NewFake(now), "bench"), levertest.Req{Dependency: "openai", Reason: "bench", Actor: "bench", For: 12 * time.Hour}); err != nil {
		b.Fatal(err)
	}
	tables[buckets] = t
	return t
}

// sparseLog returns a table whose audit log holds one record, an hour
// before now, loading it on first use: the shape on which a listing by day
// read every day of the retention (92 requests in 3 round trips).
func sparseLog(tb testing.TB) *table {
	tb.Helper()
	tablesMu.Lock()
	defer tablesMu.Unlock()
	if sparse != nil {
		return sparse
	}
	s := dynamo.NewFromConfig(moto.Config(tb, server), "sparse-log")
	if _, err := s.Init(context.Background()); err != nil {
		tb.Fatal(err)
	}
	rec := audit.Record{ID: "00000000000000aa", Time: now.Add(-time.Hour).Truncate(time.Millisecond), Actor: "loader@bench",
		Action: "breaker.force-open", Subject: breaker.OverrideKey("openai"), Context: "dev", Outcome: "ok"}
	if err := s.Put(context.Background(), rec.Item(), store.IfAbsent()); err != nil {
		tb.Fatal(err)
	}
	sparse = &table{endpoint: server, name: "sparse-log", items: 1, counter: newCounter(tb, server)}
	return sparse
}

// sparse is [sparseLog]'s table, once loaded.
var sparse *table

func sizes(b *testing.B) []int {
	out := []int{0, 10_000}
	if os.Getenv(Env100k) != "" {
		out = append(out, 100_000)
	} else {
		b.Logf("the 100k-bucket table is opt-in: set %s=1", Env100k)
	}
	return out
}

func cli(b testing.TB, endpoint, table string) *clitest.Env {
	e := clitest.New(b)
	e.Clock.Set(now)
	e.UseDynamoDB(endpoint, table)
	return e
}

// BenchmarkReads runs each operator read on tables of growing size and
// reports the items DynamoDB examined and the requests made per read.
func BenchmarkReads(b *testing.B) {
	// diff compares a levers file with the table (no gauges here): it
	// reads the overrides through the index, whatever the table's size,
	// and exits 1 (the table's openai override is an unplanned one).
	levers := b.TempDir() + "/levers.yaml"
	if err := os.WriteFile(levers, []byte("version: 1\ncontext: dev\nwindows:\n  - {dependency: postgres, reason: bench, start: 2026-01-01T00:00:00Z, duration: 1h, repeat: weekly}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	reads := []struct {
		name string
		args []string
		code int
		// maxExamined, when set, is what a read may examine per run at
		// any table size: it uses an index, never a scan.
		maxExamined float64
	}{
		{"levers-diff", []string{"diff", "-f", levers, "--no-gauges"}, 1, 10},
		{"breaker-list", []string{"breaker", "list"}, 0, 0},
		{"breaker-get", []string{"breaker", "get", "openai"}, 0, 0},
		{"audit-since-1h", []string{"audit", "list", "--since", "1h"}, 0, 0},
		{"audit-subject", []string{"audit", "list", "--subject", "breaker#openai", "--limit", "6"}, 0, 0},
		{"audit-list", []string{"audit", "list"}, 0, 0},
	}
	for _, size := range sizes(b) {
		t := loaded(b, size)
		b.Run(fmt.Sprintf("load/buckets=%d", size), func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(t.loadTime.Seconds(), "load-s")
			b.ReportMetric(float64(t.items), "items")
		})
		for _, r := range reads {
			b.Run(fmt.Sprintf("%s/buckets=%d", r.name, size), func(b *testing.B) {
				e := cli(b, t.counter.url, t.name)
				t.counter.reset()
				n := 0
				for b.Loop() {
					if res := e.Run(r.args...); res.Code != r.code {
						b.Fatalf("%v: exit %d: %s", r.args, res.Code, res.Stderr)
					}
					n++
				}
				if ex := float64(t.counter.examined.Load()) / float64(n); r.maxExamined > 0 && ex > r.maxExamined {
					b.Errorf("%s examined %.0f items per run on %d buckets, want at most %.0f (an index, no scan)", r.name, ex, size, r.maxExamined)
				}
				b.ReportMetric(float64(t.counter.examined.Load())/float64(n), "examined/op")
				b.ReportMetric(float64(t.counter.requests.Load())/float64(n), "requests/op")
			})
		}
		b.Run(fmt.Sprintf("dashboard-refresh/buckets=%d", size), func(b *testing.B) {
			s := dynamo.NewFromConfig(moto.Config(b, t.counter.url), t.name)
			ov := breaker.NewOverrides(s, clocktest.NewFake(now))
			log := audit.NewLog(s, clocktest.NewFake(now), "dev")
			known := []string{"core-api", "openai", "postgres", "screening-sim"}
			t.counter.reset()
			n := 0
			for b.Loop() {
				list, _, err := ov.ListForWith(b.Context(), known, nil)
				if err != nil || len(list) != 1 {
					b.Fatalf("overrides: %v, %v", list, err)
				}
				if _, err := log.List(b.Context(), audit.Query{Subject: breaker.OverrideKey("openai"), Limit: 6}); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(t.counter.examined.Load())/float64(n), "examined/op")
			b.ReportMetric(float64(t.counter.requests.Load())/float64(n), "requests/op")
		})
	}
}

// BenchmarkScanRate lists the 10k-bucket table's buckets (an explicit scan)
// under a read-unit cap and reports the capacity consumed against it.
func BenchmarkScanRate(b *testing.B) {
	t := loaded(b, 10_000)
	const capUnits = 100
	e := cli(b, t.counter.url, t.name)
	for b.Loop() {
		start := time.Now()
		r := e.Run("ratelimit", "list", "--limit", "1", "--max-read-units", strconv.Itoa(capUnits))
		elapsed := time.Since(start)
		if r.Code != 0 {
			b.Fatalf("ratelimit list: %s", r.Stderr)
		}
		var examined, requests int
		var units float64
		line := r.Stderr[strings.Index(r.Stderr, "scan: "):]
		if _, err := fmt.Sscanf(line, "scan: %d items examined in %d requests, %f read capacity units", &examined, &requests, &units); err != nil {
			b.Fatalf("summary %q: %v", line, err)
		}
		b.Logf("%s", strings.TrimSpace(line))
		b.ReportMetric(units, "units")
		b.ReportMetric(units/elapsed.Seconds(), "units/s")
		b.ReportMetric(capUnits, "cap-units/s")
		b.ReportMetric(float64(examined), "examined")
	}
}

// latencyLink starts toxiproxy in process between koshactl and moto
// with rtt/2 of latency each way, and returns its address.
func latencyLink(b testing.TB, upstream string, rtt time.Duration) string {
	b.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		b.Fatal(err)
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "moto", "127.0.0.1:0", u.Host)
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
	for _, stream := range []string{"upstream", "downstream"} {
		toxic := fmt.Sprintf(`{"name":"latency_%s","type":"latency","stream":%q,"attributes":{"latency":%d}}`,
			stream, stream, (rtt / 2).Milliseconds())
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
			b.Fatal(err)
		}
	}
	return "http://" + p.Listen
}

// BenchmarkLeverRoundTrips forces open and clears 1, 4 and 16
// dependencies through a 50 ms round-trip link, and reports the requests
// the timed command made (requests/op, counted in front of moto, behind
// the link): a read and one transaction, whatever the number of
// dependencies.
//
// It measures koshactl, not the table: every timed command starts from the
// same table. The levers run on a table of their own, which every iteration
// returns, with the timer stopped and straight on moto (not through the link
// or the counter), to what it held before the first: the items the
// iteration wrote are deleted (a force-open's overrides and records; a
// clear's records and those of the force-open that set it up), exactly 2
// per dependency, which is checked. moto 5.2.1 deep-copies the
// whole table once per action of a transaction, so a table that kept every
// iteration's records would make later and larger runs slower for moto's
// sake alone. The clear benchmark's overrides are forced open before each
// iteration, untimed.
//
// Besides ns/op (the mean) each lever reports median-ms, the median of its
// timed commands; moto-ms/op, the time moto took to answer the command's
// requests (measured at the counter, so without the link: what is left of a
// command past its two 50 ms round trips and moto's share is koshactl's);
// and, at 4 and 16 dependencies, x-deps1: its median over the median of the
// same lever's deps=1 commands in this run (all of their -count
// repetitions), the "four dependencies within 1.1x of one"; and
// x-deps1-client, the same ratio of the commands' times less moto's answer
// time (koshactl and the link): moto copies its table once per action of
// a transaction, which DynamoDB does not, so x-deps1 there is moto's.
func BenchmarkLeverRoundTrips(b *testing.B) {
	s := dynamo.NewFromConfig(moto.Config(b, server), fmt.Sprintf("levers-%d", leverTables.Add(1)))
	if _, err := s.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	base := pks(b, s)
	// reset deletes every item the table did not hold at the start and
	// returns how many it deleted.
	reset := func(b *testing.B) int {
		n := 0
		for pk := range pks(b, s) {
			if !base[pk] {
				if err := s.Delete(context.Background(), pk, store.Always()); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		return n
	}
	c := newCounter(b, server)
	link := latencyLink(b, c.url, timedRTT)
	// one holds each lever's deps=1 command times, over every repetition;
	// oneClient the same without moto's answer time.
	one, oneClient := map[string][]time.Duration{}, map[string][]time.Duration{}
	for _, n := range []int{1, 4, 16} {
		deps := make([]string, n)
		for i := range deps {
			deps[i] = fmt.Sprintf("rtt-%02d", i)
		}
		e := cli(b, link, s.Table())
		force := append([]string{"breaker", "force-open", "--reason", "bench", "--allow-unknown", "--for", "30m"}, deps...)
		clearArgs := append([]string{"breaker", "clear", "--reason", "bench"}, deps...)
		levers := []struct {
			name string
			args []string
			// setup, when set, runs untimed before each timed command.
			setup []string
		}{
			{"force-open", force, nil},
			{"clear", clearArgs, force},
		}
		for _, l := range levers {
			b.Run(fmt.Sprintf("%s/deps=%d", l.name, n), func(b *testing.B) {
				reset(b)
				var requests, answering int64
				var times, client []time.Duration
				for b.Loop() {
					if l.setup != nil {
						b.StopTimer()
						if r := e.Run(l.setup...); r.Code != 0 {
							b.Fatalf("%s: %s", l.setup[1], r.Stderr)
						}
						b.StartTimer()
					}
					c.reset()
					start := time.Now()
					if r := e.Run(l.args...); r.Code != 0 {
						b.Fatalf("%s: %s", l.args[1], r.Stderr)
					}
					times = append(times, time.Since(start))
					client = append(client, times[len(times)-1]-time.Duration(c.answering.Load()))
					requests += c.requests.Load()
					answering += c.answering.Load()
					b.StopTimer()
					if got := reset(b); got != 2*n {
						b.Fatalf("%s of %d dependencies left %d items to delete, want %d (an override or a record each)", l.name, n, got, 2*n)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(requests)/float64(len(times)), "requests/op")
				b.ReportMetric(float64(answering)/float64(len(times))/float64(time.Millisecond), "moto-ms/op")
				med := median(times)
				b.ReportMetric(float64(med)/float64(time.Millisecond), "median-ms")
				if n == 1 {
					one[l.name] = append(one[l.name], times...)
					oneClient[l.name] = append(oneClient[l.name], client...)
				} else if len(one[l.name]) > 0 {
					b.ReportMetric(float64(med)/float64(median(one[l.name])), "x-deps1")
					b.ReportMetric(float64(median(client))/float64(median(oneClient[l.name])), "x-deps1-client")
				}
			})
		}
	}
}

// leverTables names BenchmarkLeverRoundTrips's table afresh each time the
// benchmark runs (-cpu runs it once per value).
var leverTables atomic.Int64

// pks returns the keys of every item in s's table, read straight from it.
func pks(b testing.TB, s *dynamo.Store) map[string]bool {
	b.Helper()
	out := map[string]bool{}
	for it, err := range s.Scan(context.Background(), store.ScanQuery{}) {
		if err != nil {
			b.Fatal(err)
		}
		out[it[store.PK].(string)] = true
	}
	return out
}

// median returns the middle of ds (the mean of the two middle ones for an
// even count), sorting a copy.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}
