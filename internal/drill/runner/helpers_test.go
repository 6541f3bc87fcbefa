package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// memStore is an in-memory store.Store with the contract's conditions. It
// starts no goroutines, so it works inside synctest bubbles. failPut,
// failDelete and lostPut inject failures.
type memStore struct {
	mu    sync.Mutex
	items map[string]store.Item
	// failDelete makes Delete of keys with this prefix fail (unavailable).
	failDelete string
	// lostPut makes the next Put with this prefix succeed but report an
	// error, like a write whose response was lost.
	lostPut string
	// failGet makes Get of keys with this prefix fail.
	failGet string
	// denyPut refuses, as IAM would (nothing written), a Put of keys with
	// this prefix, except those with the prefix allowPut.
	denyPut, allowPut string
}

var _ store.Store = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{items: map[string]store.Item{}} }

func (m *memStore) Get(ctx context.Context, pk string) (store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failGet != "" && strings.HasPrefix(pk, m.failGet) {
		return nil, fmt.Errorf("get %s: %w", pk, store.ErrUnavailable)
	}
	it, ok := m.items[pk]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", pk, store.ErrNotFound)
	}
	return it.Clone(), nil
}

func (m *memStore) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	item = store.Normalize(item)
	pk := item.PK()
	if m.denyPut != "" && strings.HasPrefix(pk, m.denyPut) && (m.allowPut == "" || !strings.HasPrefix(pk, m.allowPut)) {
		return fmt.Errorf("put %s: %w", pk, store.ErrCredentials)
	}
	cur, ok := m.items[pk]
	if !ok {
		cur = nil
	}
	if !cond.Holds(cur) {
		return &store.ConditionError{PK: pk, Current: cur}
	}
	m.items[pk] = item.Clone()
	if m.lostPut != "" && strings.HasPrefix(pk, m.lostPut) {
		m.lostPut = ""
		return fmt.Errorf("put %s: response lost: %w", pk, store.ErrUnavailable)
	}
	return nil
}

func (m *memStore) Delete(ctx context.Context, pk string, cond store.Condition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failDelete != "" && strings.HasPrefix(pk, m.failDelete) {
		return fmt.Errorf("delete %s: %w", pk, store.ErrUnavailable)
	}
	cur, ok := m.items[pk]
	if !ok {
		cur = nil
	}
	if !cond.Holds(cur) {
		return &store.ConditionError{PK: pk, Current: cur}
	}
	delete(m.items, pk)
	return nil
}

// Transact applies a change all or nothing, with the same injected
// failures as Put and Delete: a denied put or a failing delete writes
// nothing; a put with the lostPut prefix lands and reports a lost answer.
func (m *memStore) Transact(ctx context.Context, c store.Change) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("change %s: %w: %w", c.Token, store.ErrNotSent, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lost := false
	for _, op := range c.Ops {
		pk := op.PK()
		if op.Put != nil && m.denyPut != "" && strings.HasPrefix(pk, m.denyPut) && (m.allowPut == "" || !strings.HasPrefix(pk, m.allowPut)) {
			return fmt.Errorf("change %s: put %s: %w", c.Token, pk, store.ErrCredentials)
		}
		if op.Put == nil && m.failDelete != "" && strings.HasPrefix(pk, m.failDelete) {
			return fmt.Errorf("change %s: delete %s: %w", c.Token, pk, store.ErrUnavailable)
		}
		lost = lost || op.Put != nil && m.lostPut != "" && strings.HasPrefix(pk, m.lostPut)
	}
	if err := c.ApplyTo(m.items, func(it store.Item) store.Item { return store.Normalize(it).Clone() }); err != nil {
		return err
	}
	if lost {
		m.lostPut = ""
		return fmt.Errorf("change %s: response lost: %w", c.Token, store.ErrUnavailable)
	}
	return nil
}

func (m *memStore) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		m.mu.Lock()
		var out []store.Item
		for k, it := range m.items {
			if strings.HasPrefix(k, q.Prefix) {
				out = append(out, it.Clone())
			}
		}
		m.mu.Unlock()
		sort.Slice(out, func(i, j int) bool { return out[i].PK() < out[j].PK() })
		for _, it := range out {
			if !yield(it, nil) {
				return
			}
		}
	}
}

func (m *memStore) Describe() string { return "memory store" }
func (m *memStore) Close() error     { return nil }

func (m *memStore) has(pk string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.items[pk]
	return ok
}

// handlerDoer sends requests to an http.Handler in-process: no sockets, so
// it works inside synctest bubbles.
type handlerDoer struct{ h http.Handler }

func (d handlerDoer) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func (d handlerDoer) RoundTrip(req *http.Request) (*http.Response, error) { return d.Do(req) }

// fakeFleet is a tiny data plane over the same store as the drill: each
// dependency has a breaker that is forced when its override is active,
// otherwise in the state the test sets; /search degrades while openai is
// forced or open; /metrics exposes kosha_breaker_state.
type fakeFleet struct {
	t        testing.TB
	ov       *breaker.Overrides
	verifier *chaos.Verifier

	mu       sync.Mutex
	states   map[string]gauge.State
	requests []http.Header
	// metricsDown makes /metrics answer 503 (the source went away).
	metricsDown bool
}

func (f *fakeFleet) setMetricsDown(down bool) {
	f.mu.Lock()
	f.metricsDown = down
	f.mu.Unlock()
}

func (f *fakeFleet) state(dep string) gauge.State {
	if forced, _ := f.ov.ForcedOpen(context.Background(), dep); forced.Active {
		return gauge.ForcedOpen
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.states[dep]
}

func (f *fakeFleet) set(dep string, s gauge.State) {
	f.mu.Lock()
	f.states[dep] = s
	f.mu.Unlock()
}

func (f *fakeFleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		f.set(r.URL.Query().Get("dep"), gauge.Open)
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

func (f *fakeFleet) requestHeaders() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.requests...)
}

// env is a drill test environment: an in-memory store (or another, see
// newEnvOn), the fake fleet behind an in-process HTTP client, a chaos key,
// and services on them.
type env struct {
	t testing.TB
	// store is the in-memory store (nil on another store).
	store *memStore
	clock clock.Clock
	fleet *fakeFleet
	svc   *runtime.Deps
	ov    *breaker.Overrides
	bk    *ratelimit.Buckets
	log   *audit.Log
	keys  *chaos.KeySet
}

func newEnv(t testing.TB) *env {
	t.Helper()
	m := newMemStore()
	e := newEnvOn(t, m)
	e.store = m
	return e
}

// newEnvOn is newEnv on the store s.
func newEnvOn(t testing.TB, s store.Store) *env {
	t.Helper()
	e := &env{t: t, clock: clock.Real{}}
	e.ov = breaker.NewOverrides(s, e.clock)
	var err error
	if e.bk, err = ratelimit.NewBuckets(s, e.clock, ratelimit.Limits{}); err != nil {
		t.Fatal(err)
	}
	e.log = audit.NewLog(s, e.clock, "test")
	key, err := chaos.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.keys, err = chaos.NewKeySet(key); err != nil {
		t.Fatal(err)
	}
	minter, err := chaos.NewMinter(e.keys, chaos.MinterOptions{Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := chaos.NewVerifier(e.keys, chaos.Options{Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	e.fleet = &fakeFleet{t: t, ov: e.ov, verifier: verifier, states: map[string]gauge.State{}}
	doer := handlerDoer{e.fleet}
	e.svc = &runtime.Deps{
		Clock: e.clock, ContextName: "test", StoreDescription: "memory store", Actor: "tester@test",
		Overrides: e.ov, KnownDependencies: []string{"core-api", "openai", "postgres", "screening-sim"},
		Buckets: e.bk, Audit: e.log, Minter: minter, HTTP: doer,
		Gauges: &runtime.MetricsGauges{Name: "prometheus http://fleet/metrics", New: func(context.Context) (metrics.GaugeSource, error) {
			return metrics.NewPrometheus([]string{"http://fleet/metrics"}, metrics.PrometheusOptions{Client: &http.Client{Transport: doer}, Clock: e.clock})
		}},
		LookupEnv: func(name string) (string, bool) {
			if name == "FLEET" {
				return "http://fleet", true
			}
			return "", false
		},
	}
	return e
}

// parse parses src, failing the test on problems.
func parse(t testing.TB, src string) *drill.Drill {
	t.Helper()
	d, probs := drill.Parse(kinds.Builtin(), "test.yaml", []byte(src))
	if len(probs) > 0 {
		t.Fatalf("drill does not parse:\n%v", (&drill.ProblemsError{Problems: probs}).Error())
	}
	return d
}

// recorder keeps every event's kind and a rendered line, and can act on
// events (cancel on a step's start).
type recorder struct {
	mu     sync.Mutex
	events []Event
	on     func(Event)
}

func (r *recorder) Report(ev Event) {
	r.mu.Lock()
	cp := ev
	cp.Journal = nil
	if ev.Step != nil {
		s := *ev.Step
		cp.Step = &s
	}
	r.events = append(r.events, cp)
	on := r.on
	r.mu.Unlock()
	if on != nil {
		on(ev)
	}
}

func (e *env) run(ctx context.Context, d *drill.Drill, reps ...Reporter) (*drill.Journal, string) {
	e.t.Helper()
	var log bytes.Buffer
	r := &Runner{Deps: e.svc, Reporters: append([]Reporter{&LiveLog{W: &log}}, reps...)}
	j := r.Run(ctx, d)
	return j, log.String()
}

func (e *env) auditRecords() []audit.Record {
	e.t.Helper()
	l, err := e.log.List(context.Background(), audit.Query{})
	if err != nil {
		e.t.Fatal(err)
	}
	recs := l.Records
	return recs
}

func journalJSON(t testing.TB, j *drill.Journal) string {
	t.Helper()
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stepByID(t testing.TB, j *drill.Journal, id string) drill.StepRecord {
	t.Helper()
	for _, s := range j.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("journal has no step %q", id)
	return drill.StepRecord{}
}

var errBoom = errors.New("boom")

func parseFloat(t testing.TB, s string) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return f
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
