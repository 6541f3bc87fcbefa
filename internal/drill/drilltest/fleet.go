package drilltest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/gauge"
)

// HandlerDoer sends requests to an [http.Handler] in-process: no sockets,
// so it works inside synctest bubbles.
type HandlerDoer struct{ H http.Handler }

// Do serves req with the handler.
func (d HandlerDoer) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	d.H.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// RoundTrip is Do, for an [http.Client]'s transport.
func (d HandlerDoer) RoundTrip(req *http.Request) (*http.Response, error) { return d.Do(req) }

// Fleet is a tiny data plane over the same store as the drill: each
// dependency has a breaker that is forced when its override is active,
// otherwise in the state the test sets; /search degrades while openai is
// forced or open; /metrics exposes kosha_breaker_state of two instances.
type Fleet struct {
	ov       *breaker.Overrides
	verifier *chaos.Verifier

	mu       sync.Mutex
	states   map[string]gauge.State
	requests []http.Header
	// metricsDown makes /metrics answer 503 (the source went away).
	metricsDown bool
}

// SetMetricsDown makes /metrics answer 503 (down) or answer again.
func (f *Fleet) SetMetricsDown(down bool) {
	f.mu.Lock()
	f.metricsDown = down
	f.mu.Unlock()
}

func (f *Fleet) state(dep string) gauge.State {
	if forced, _ := f.ov.ForcedOpen(context.Background(), dep); forced.Active {
		return gauge.ForcedOpen
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.states[dep]
}

// Set sets dep's breaker state while no override forces it.
func (f *Fleet) Set(dep string, s gauge.State) {
	f.mu.Lock()
	f.states[dep] = s
	f.mu.Unlock()
}

// ServeHTTP serves /metrics, /search, /trip?dep= (opens dep's breaker),
// /slow (never answers) and /limited (429 with Retry-After).
func (f *Fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Header.Clone())
	down := f.metricsDown
	f.mu.Unlock()
	switch r.URL.Path {
	case "/metrics":
		if down {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE kosha_breaker_state gauge")
		for _, dep := range []string{"openai", "core-api", "screening-sim"} {
			for _, in := range []string{"i-1", "i-2"} {
				fmt.Fprintf(w, "kosha_breaker_state{dependency=%q,instance=%q} %d\n", dep, in, f.state(dep))
			}
		}
	case "/search":
		s := f.state("openai")
		degraded := s == gauge.Open || s == gauge.ForcedOpen
		res := map[string]any{"degraded": degraded}
		if degraded {
			res["degraded_reason"] = "embeddings_unavailable"
		}
		if h := r.Header.Get(chaos.HeaderName); h != "" {
			if _, err := f.verifier.Verify(r.Context(), h); err != nil {
				http.Error(w, "bad chaos header: "+err.Error(), http.StatusForbidden)
				return
			}
			res["chaos"] = "applied"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": res})
	case "/trip":
		f.Set(r.URL.Query().Get("dep"), gauge.Open)
		w.WriteHeader(http.StatusNoContent)
	case "/slow":
		select {
		case <-r.Context().Done():
		case <-time.After(time.Hour):
		}
	case "/limited":
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"code":"rate_limited","retry_after_s":3}}`)
	default:
		http.NotFound(w, r)
	}
}

// RequestHeaders returns the headers of every request served so far.
func (f *Fleet) RequestHeaders() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.requests...)
}
