package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox/memstore"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// testScale runs the LLD 20 times faster: override cache 250 ms, poll 50 ms,
// open durations 0.75 s (core-api) and 1.5 s, attempt caps 75 to 200 ms.
const testScale = 20

// testConfig is the LLD's settings, accelerated, with instant downstreams,
// chaos enabled and no traffic.
func testConfig() sandbox.Config {
	cfg := sandbox.DefaultConfig()
	cfg.TimeScale = testScale
	cfg.ChaosEnabled = true
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileInstant)
	cfg.Profile = sandbox.ProfileInstant
	cfg.Audit.Interval = 300 * time.Millisecond
	return cfg
}

// testKey is a fixed chaos key for tests (never a real one).
func testKey(t testing.TB) chaos.Key {
	t.Helper()
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(i*37 + 11) //nolint:gosec // G115: wraps on purpose, for a spread of byte values
	}
	k, err := chaos.NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// harness is a sandbox serving on a free loopback port.
type harness struct {
	t      testing.TB
	srv    *sandbox.Server
	url    string
	store  sandbox.Store
	log    *audit.Log
	key    chaos.Key
	client *http.Client
}

type harnessOpt func(*sandbox.Deps)

// start builds and starts a sandbox on 127.0.0.1:0, stopped at cleanup.
func start(t testing.TB, cfg sandbox.Config, opts ...harnessOpt) *harness {
	t.Helper()
	st := memstore.New()
	h := &harness{t: t, store: st, key: testKey(t)}
	ks, err := chaostest.NewKeySet(h.key)
	if err != nil {
		t.Fatal(err)
	}
	h.log = audit.NewLog(st, clock.Real{}, "test")
	deps := sandbox.Deps{Store: st, Keys: ks, Audit: h.log, Logger: slog.New(slog.DiscardHandler), ContextName: "test"}
	for _, o := range opts {
		o(&deps)
	}
	h.store, h.log = deps.Store, deps.Audit.(*audit.Log)
	srv, err := sandbox.New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context(), ln); err != nil {
		t.Fatalf("Start: %v", err)
	}
	h.srv, h.url = srv, srv.URL()
	h.client = &http.Client{Timeout: wait.Ceiling}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait.Ceiling)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

// get sends GET path to the sandbox.
func (h *harness) get(path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, h.url+path, nil)
	if err != nil {
		return nil, err
	}
	return h.client.Do(req)
}

// rpcReply is a decoded JSON-RPC response.
type rpcReply struct {
	Status     int
	Header     http.Header
	ID         json.RawMessage `json:"id"`
	Result     json.RawMessage `json:"result"`
	Error      *sandbox.RPCError
	Structured map[string]any
	IsError    bool
}

// req describes one tool call.
type req struct {
	token    string
	tool     string
	args     any
	instance string
	headers  map[string]string
	// fields are header fields added as they are, repeated names included.
	fields http.Header
	method string // default tools/call
}

func (h *harness) do(r req) rpcReply {
	h.t.Helper()
	out, err := h.try(r)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// try is do for goroutines other than the test's: it reports failures
// instead of ending the test.
func (h *harness) try(r req) (rpcReply, error) {
	method := r.method
	if method == "" {
		method = "tools/call"
	}
	params := map[string]any{"name": r.tool}
	if r.args != nil {
		params["arguments"] = r.args
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return h.tryPost(r, body)
}

func (h *harness) post(r req, body []byte) rpcReply {
	h.t.Helper()
	out, err := h.tryPost(r, body)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *harness) tryPost(r req, body []byte) (rpcReply, error) {
	hr, err := http.NewRequestWithContext(context.Background(), http.MethodPost, h.url+sandbox.PathMCP, bytes.NewReader(body))
	if err != nil {
		return rpcReply{}, err
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.instance != "" {
		hr.Header.Set(sandbox.HeaderInstance, r.instance)
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	for k, vs := range r.fields {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	resp, err := h.client.Do(hr)
	if err != nil {
		return rpcReply{}, fmt.Errorf("POST %s: %w", sandbox.PathMCP, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := rpcReply{Status: resp.StatusCode, Header: resp.Header}
	if len(bytes.TrimSpace(raw)) == 0 {
		return out, nil
	}
	var env struct {
		ID     json.RawMessage   `json:"id"`
		Result json.RawMessage   `json:"result"`
		Error  *sandbox.RPCError `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return out, fmt.Errorf("response is not JSON-RPC: %w\n%s", err, raw)
	}
	out.ID, out.Result, out.Error = env.ID, env.Result, env.Error
	if len(env.Result) > 0 {
		var tr struct {
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
			Content           []struct {
				Type, Text string
			} `json:"content"`
		}
		if err := json.Unmarshal(env.Result, &tr); err == nil {
			out.Structured, out.IsError = tr.StructuredContent, tr.IsError
			if tr.StructuredContent != nil && (len(tr.Content) != 1 || tr.Content[0].Type != "text") {
				return out, fmt.Errorf("tool result has content %+v, want one text block", tr.Content)
			}
		}
	}
	return out, nil
}

// call makes one tools/call and fails the test unless HTTP 200.
func (h *harness) call(token, tool string, args any, instance string, headers map[string]string) rpcReply {
	h.t.Helper()
	r := h.do(req{token: token, tool: tool, args: args, instance: instance, headers: headers})
	if r.Status != http.StatusOK || r.Error != nil {
		h.t.Fatalf("%s: HTTP %d, error %+v", tool, r.Status, r.Error)
	}
	return r
}

// scrape reads /metrics.
func (h *harness) scrape() map[string]*dto.MetricFamily {
	h.t.Helper()
	resp, err := h.get(sandbox.PathMetrics)
	if err != nil {
		h.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	out := map[string]*dto.MetricFamily{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			h.t.Fatalf("parse metrics: %v", err)
		}
		out[mf.GetName()] = &mf
	}
	return out
}

// value returns the sample of name whose labels include want (summed over
// matching samples), and whether any matched.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
	sum, found := 0.0, false
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, found
}

// metric scrapes and returns one value.
func (h *harness) metric(name string, labels map[string]string) float64 {
	h.t.Helper()
	v, _ := value(h.scrape(), name, labels)
	return v
}

// states scrapes kosha_breaker_state of dependency, by instance.
func (h *harness) states(dependency string) map[string]float64 {
	h.t.Helper()
	out := map[string]float64{}
	mf := h.scrape()["kosha_breaker_state"]
	if mf == nil {
		h.t.Fatal("no kosha_breaker_state in /metrics")
	}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["dependency"] == dependency {
			out[labels["instance"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// allAre reports whether every instance's gauge for dependency is v.
func allAre(states map[string]float64, n int, v float64) bool {
	if len(states) != n {
		return false
	}
	for _, s := range states {
		if s != v {
			return false
		}
	}
	return true
}

// records lists audit records of action.
func (h *harness) records(action string) []audit.Record {
	h.t.Helper()
	rs, err := h.log.List(context.Background(), audit.Query{Action: action})
	if err != nil {
		h.t.Fatal(err)
	}
	return rs.Records
}

// mint signs a header with the harness key.
func (h *harness) mint(target chaos.Target, fault chaos.Fault, ms int, clk clock.Clock) string {
	h.t.Helper()
	ks, _ := chaostest.NewKeySet(h.key)
	m, err := chaos.NewMinter(ks, chaos.MinterOptions{Clock: clk})
	if err != nil {
		h.t.Fatal(err)
	}
	minted, err := m.Mint(context.Background(), chaos.MintRequest{Target: target, Fault: fault, Ms: ms, TTL: 5 * time.Minute})
	if err != nil {
		h.t.Fatal(err)
	}
	return minted.Value()
}

// badSignature returns value with its signature's first character changed.
// That character carries six bits of the MAC, so the header stays canonical
// and fails on the signature. (Changing the last one can touch only the two
// padding bits, which strict base64url rejects as syntax instead.)
func badSignature(value string) string {
	at := strings.Index(value, ";sig=") + len(";sig=")
	return value[:at] + map[bool]string{true: "B", false: "A"}[value[at] == 'A'] + value[at+1:]
}

// str reads a string field of a structured result.
func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// num reads a number field of a structured result.
func num(m map[string]any, k string) float64 { f, _ := m[k].(float64); return f }

func newStore() store.Store { return memstore.New() }

func describe(r rpcReply) string {
	return fmt.Sprintf("HTTP %d error %+v structured %v", r.Status, r.Error, r.Structured)
}
