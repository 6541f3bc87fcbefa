package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// benchClients is how many principals the benchmarks spread calls over, so
// rate-limit takes do not contend on one bucket.
const benchClients = 64

// benchConfig is the LLD's settings with instant downstreams, rate limits
// that never bite, and benchClients agents.
func benchConfig(instances int) sandbox.Config {
	cfg := sandbox.DefaultConfig()
	cfg.Instances = instances
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileInstant)
	cfg.Profile = sandbox.ProfileInstant
	cfg.RateLimit.Capacity, cfg.RateLimit.RefillPerSecond = 1e9, 1e6
	cfg.Resilience.MaxInFlight = 1 << 20
	for i := range benchClients {
		cfg.Principals = append(cfg.Principals, sandbox.Principal{Token: "bench-" + strconv.Itoa(i), Client: "bench-" + strconv.Itoa(i), Role: sandbox.RoleAgent})
	}
	return cfg
}

func benchStore(b *testing.B, kind string) store.Store {
	b.Helper()
	if kind == "memory" {
		return memstore.New()
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "local.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st
}

func benchServer(b *testing.B, cfg sandbox.Config, st store.Store) *sandbox.Server {
	b.Helper()
	srv, err := sandbox.New(cfg, sandbox.Deps{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background(), ln); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv
}

func searchBody() []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": sandbox.ToolSearchKnowledgeBase, "arguments": map[string]any{"query": "how do I raise a dispute"}}})
	return b
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// BenchmarkEndToEnd measures tool calls per second through the whole
// sandbox over loopback HTTP (search_knowledge_base: core-api, openai and
// postgres policies, a rate-limit take on the store), with 16 concurrent
// clients, and their p50/p99 latency.
func BenchmarkEndToEnd(b *testing.B) {
	for _, storeKind := range []string{"sqlite", "memory"} {
		for _, n := range []int{4, 64} {
			b.Run(fmt.Sprintf("store=%s/instances=%d", storeKind, n), func(b *testing.B) {
				srv := benchServer(b, benchConfig(n), benchStore(b, storeKind))
				url := srv.URL() + sandbox.PathMCP
				body := searchBody()
				const conc = 16
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc, MaxIdleConns: conc}}
				var (
					mu      sync.Mutex
					lat     []time.Duration
					next    atomic.Int64
					failed  atomic.Int64
					clients atomic.Int64
				)
				b.SetParallelism(max(1, conc/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					token := "Bearer bench-" + strconv.Itoa(int(clients.Add(1)-1)%benchClients)
					local := make([]time.Duration, 0, 1024)
					for pb.Next() {
						next.Add(1)
						req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
						req.Header.Set("Authorization", token)
						t0 := time.Now()
						resp, err := client.Do(req)
						if err != nil {
							failed.Add(1)
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						local = append(local, time.Since(t0))
						if resp.StatusCode != http.StatusOK {
							failed.Add(1)
						}
					}
					mu.Lock()
					lat = append(lat, local...)
					mu.Unlock()
				})
				elapsed := time.Since(start)
				b.StopTimer()
				if f := failed.Load(); f > 0 {
					b.Fatalf("%d of %d calls failed", f, next.Load())
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
				b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
			})
		}
	}
}

// BenchmarkOverridePropagation measures the time from a force-open written
// to the store to every instance's breaker forced, with no traffic (the idle
// instances sync when their cache goes stale), at a 200 ms cache period and
// a 50 ms poll; the bound is the cache period. Each iteration forces at a
// random phase, waits, then clears at once (just after the last instance
// read, the worst phase for the clear) and waits: clear-* are the clears'.
func BenchmarkOverridePropagation(b *testing.B) {
	for _, tc := range []struct {
		store string
		n     int
	}{{"sqlite", 4}, {"sqlite", 64}, {"memory", 64}} {
		b.Run(fmt.Sprintf("store=%s/instances=%d", tc.store, tc.n), func(b *testing.B) {
			cfg := benchConfig(tc.n)
			cfg.OverrideRefresh, cfg.OverridePoll = 200*time.Millisecond, 50*time.Millisecond
			st := benchStore(b, tc.store)
			srv := benchServer(b, cfg, st)
			lg := audit.NewLog(st, nil, "test")
			all := func(want circuit.State) bool {
				for _, in := range srv.Fleet().Instances() {
					if in.BreakerState(sandbox.OpenAI) != want {
						return false
					}
				}
				return true
			}
			wait := func(want circuit.State) time.Duration {
				start := time.Now()
				for !all(want) {
					if time.Since(start) > 10*time.Second {
						b.Fatalf("not every instance %s after 10s", want)
					}
					time.Sleep(time.Millisecond)
				}
				return time.Since(start)
			}
			var took, cleared []time.Duration
			bound := cfg.OverrideRefresh
			b.ResetTimer()
			for range b.N {
				// A random pause puts the force at a random phase of the
				// instances' read cycles, as an operator's would be.
				time.Sleep(time.Duration(rand.Int64N(int64(bound))))
				if _, _, err := levertest.Force(context.Background(), st, nil, lg, levertest.Req{Dependency: sandbox.OpenAI, Reason: "bench", Actor: "bench", For: time.Hour}); err != nil {
					b.Fatal(err)
				}
				took = append(took, wait(circuit.ForcedOpen))
				if _, _, err := levertest.Clear(context.Background(), st, nil, lg, sandbox.OpenAI, "t", "drill"); err != nil {
					b.Fatal(err)
				}
				cleared = append(cleared, wait(circuit.Closed))
			}
			b.StopTimer()
			var readErrors float64
			for _, in := range srv.Fleet().Instances() {
				if d, ok := in.Dependency(sandbox.OpenAI); ok {
					readErrors += float64(d.Force.ReadErrors())
				}
			}
			b.ReportMetric(readErrors, "read-errors")
			worst := slices.Max(took)
			b.ReportMetric(float64(percentile(took, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(worst)/float64(bound), "max/bound")
			b.ReportMetric(float64(percentile(cleared, 0.5).Microseconds())/1000, "clear-p50-ms")
			b.ReportMetric(float64(slices.Max(cleared).Microseconds())/1000, "clear-max-ms")
			b.ReportMetric(float64(slices.Max(cleared))/float64(bound), "clear-max/bound")
			late := 0
			for _, d := range slices.Concat(took, cleared) {
				if d > bound+10*time.Millisecond {
					late++
				}
			}
			b.ReportMetric(float64(late), "over-bound+10ms")
		})
	}
}

// discardWriter is a reusable http.ResponseWriter that keeps only the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGatewayCPU measures the process CPU time per tool call of the
// gateway path itself: the handler called in process (no sockets), instant
// downstreams (no simulated waits), one call at a time. It covers routing,
// shedding, authentication, the JSON-RPC decode and encode, the rate-limit
// take (on the in-memory store unless the store is named), the chaos gate,
// the tool and every policy layer, plus the GC they cause.
func BenchmarkGatewayCPU(b *testing.B) {
	tools := map[string]map[string]any{
		sandbox.ToolSearchKnowledgeBase: {"query": "how do I raise a dispute"},
		sandbox.ToolScreenEntity:        {"name": "Ada Lovelace"},
		sandbox.ToolRaiseDispute:        {"transaction_id": "t-1", "reason": "fraud", "idempotency_key": "k-1"},
		sandbox.ToolGetServiceHealth:    {},
	}
	cases := []struct{ tool, store string }{
		{sandbox.ToolSearchKnowledgeBase, "memory"}, {sandbox.ToolScreenEntity, "memory"}, {sandbox.ToolRaiseDispute, "memory"},
		{sandbox.ToolGetServiceHealth, "memory"}, {sandbox.ToolSearchKnowledgeBase, "sqlite"},
	}
	for _, tc := range cases {
		b.Run(fmt.Sprintf("tool=%s/store=%s", tc.tool, tc.store), func(b *testing.B) {
			srv, err := sandbox.New(benchConfig(4), sandbox.Deps{Store: benchStore(b, tc.store), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": tc.tool, "arguments": tools[tc.tool]}})
			w := &discardWriter{h: http.Header{}}
			reader := bytes.NewReader(body)
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "/mcp", reader)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := range b.N {
				reader.Reset(body)
				req.Header = http.Header{"Authorization": {"Bearer bench-" + strconv.Itoa(i%benchClients)}}
				req.Body = io.NopCloser(reader)
				clear(w.h)
				h.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
			cpu := cpuTime() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1000, "cpu-µs/call")
		})
	}
}
