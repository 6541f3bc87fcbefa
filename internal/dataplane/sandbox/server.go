package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/exposition"
	"github.com/kosha-platform/koshactl/internal/dataplane/limiter"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Endpoints, all on the one listen address.
const (
	PathMCP        = "/mcp"
	PathMetrics    = "/metrics"
	PathHealth     = "/healthz"
	PathStatus     = "/status"
	PathAdminChaos = "/admin/chaos"
)

// outboxRelayInterval is how often (in LLD time) the outbox relay publishes.
const outboxRelayInterval = time.Second

// Store is what the sandbox needs of the context's store, where breaker
// overrides, rate-limit buckets and audit records live. The caller owns it:
// the sandbox never closes it.
type Store interface {
	breaker.OverrideStore // Get, Put, Delete, Scan
	// Describe names the store for /status.
	Describe() string
}

var _ Store = store.Store(nil)

// Deps are what a [Server] is built on. Store is required; so is Keys when
// chaos is enabled.
type Deps struct {
	// Store is the context's store: breaker overrides, rate-limit buckets
	// and audit records live there.
	Store Store
	// Clock tells the time of breakers, the override cache, rate limits and
	// chaos expiry. Nil means the wall clock. Request deadlines and attempt
	// timeouts are timers, so it must read the runtime's time (the wall
	// clock, or a testing/synctest bubble's).
	Clock clock.Clock
	// Keys verify chaos headers: the context's chaos key source (the local
	// context's generated key, the one `koshactl chaos sign` uses).
	Keys chaos.Keyring
	// Audit receives the audit records. Nil means an audit.Log on Store.
	Audit audit.Appender
	// Logger receives breaker transitions and warnings. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Registry receives the metrics. Nil means a private registry.
	Registry *exposition.Registry
	// EMF, when set, receives the breaker_state gauge as CloudWatch EMF
	// lines.
	EMF io.Writer
	// ContextName names the context in audit records and /status.
	ContextName string
}

// Server is the sandbox: the fleet, its downstreams, the tool endpoint,
// metrics, the admin knobs and the traffic generator, on one listener.
type Server struct {
	cfg       Config
	deps      Deps
	m         *metrics
	fleet     *Fleet
	sims      *sims
	gw        *gateway
	audit     *auditWriter
	emf       *emfWriter
	traffic   *traffic
	collector *fleetCollector
	hosts     *hostGuard
	handler   http.Handler
	started   time.Time

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	stopBG   context.CancelFunc
	stopLoad context.CancelFunc
	bg       sync.WaitGroup
	load     sync.WaitGroup
	served   chan error
}

// New builds a sandbox from cfg (validated, then scaled by its TimeScale)
// and deps. Nothing runs until [Server.Start].
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil {
		return nil, errors.New("new sandbox: no store")
	}
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Audit == nil {
		deps.Audit = audit.NewDataPlaneLog(deps.Store, deps.Clock, deps.ContextName)
	}
	if deps.Registry == nil {
		deps.Registry = exposition.NewRegistry()
	}
	cfg = cfg.scaled()
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("new sandbox: register metrics: %w", err)
	}
	s := &Server{cfg: cfg, deps: deps, m: m, started: deps.Clock.Now()}
	if deps.EMF != nil {
		s.emf = newEMFWriter(deps.EMF, cfg.EMF, deps.Clock, deps.Logger)
	}
	var onChange func(string, circuit.Transition)
	var onFreeze func(string, bool, time.Time)
	if s.emf != nil {
		onChange, onFreeze = s.emf.transition, s.emf.freezeChange
	}
	s.fleet, err = newFleet(cfg, deps, onChange, onFreeze)
	if err != nil {
		return nil, err
	}
	s.collector = newFleetCollector(s.fleet, deps.Clock)
	if err := deps.Registry.Register(s.collector.collector()); err != nil {
		return nil, fmt.Errorf("new sandbox: register metrics: %w", err)
	}
	s.sims = &sims{byName: map[string]*Sim{}}
	down := map[string]Downstream{}
	fleet := s.fleet
	for _, name := range Downstreams() {
		sim := NewSim(name, cfg.Downstreams[name], deps.Clock, s.started, m.observeFault)
		// A knob injects nothing while the fleet, by its instances'
		// readings, is frozen.
		sim.ObeyFreeze(func(context.Context) bool { return fleet.chaosFrozen(deps.Clock.Now()) })
		s.sims.byName[name] = sim
		down[name] = sim
	}
	s.sims.byName[SQS] = NewSim(SQS, DownstreamProfile{}, deps.Clock, s.started, m.observeFault)
	limiter, err := limiter.New(deps.Store, limiter.Config{Limits: cfg.RateLimit,
		Clock: deps.Clock, Observer: m})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s.audit = newAuditWriter(deps.Audit, deps.Clock, deps.Logger, m, cfg.Audit)
	gate, err := newChaosGate(cfg.ChaosEnabled, deps.Keys, cfg.ChaosTargets, deps.Clock, s.audit, m)
	if err != nil {
		return nil, err
	}
	tr, tps, err := newTraffic(cfg.Traffic, cfg.RateLimit.WithDefaults().RefillPerSecond, m)
	if err != nil {
		return nil, err
	}
	s.traffic = tr
	s.gw = &gateway{cfg: cfg, fleet: s.fleet, down: down, outbox: newOutbox(deps.Clock), deferred: &deferrals{},
		principals: newPrincipals(append(slices.Clone(cfg.Principals), tps...)), limiter: limiter, chaos: gate, m: m,
		clock: deps.Clock, logger: deps.Logger,
		shedInFlight: m.shed.WithLabelValues(ShedInFlight), shedMinBudget: m.shed.WithLabelValues(ShedMinBudget),
		shedDepOpen: m.shed.WithLabelValues(ShedDependencyOpen)}
	// The endpoints that take bearer tokens answer only to this sandbox's
	// own host names (DNS rebinding); the read-only ones answer any Host.
	s.hosts = newHostGuard(cfg.Listen, cfg.AllowedHosts)
	mux := http.NewServeMux()
	mux.Handle(PathMCP, s.hosts.wrap(s.gw)) // it answers wrong methods in JSON-RPC
	mux.Handle("GET "+PathMetrics, m.handler())
	mux.HandleFunc("GET "+PathHealth, s.health)
	mux.HandleFunc("GET "+PathStatus, s.statusHandler)
	mux.Handle(PathAdminChaos, s.hosts.wrap(http.HandlerFunc(s.adminChaos)))
	mux.Handle(PathAdminChaos+"/{target}", s.hosts.wrap(http.HandlerFunc(s.adminChaos)))
	mux.HandleFunc("GET /{$}", s.index)
	s.handler = mux
	return s, nil
}

// Config returns the configuration the server runs, scaled to sandbox time.
func (s *Server) Config() Config { return s.cfg.Clone() }

// Fleet returns the gateway instances.
func (s *Server) Fleet() *Fleet { return s.fleet }

// Sim returns the named downstream simulator.
func (s *Server) Sim(name string) (*Sim, bool) {
	sim := s.sims.get(name)
	return sim, sim != nil
}

// Outbox returns core-api's outbox.
func (s *Server) Outbox() *Outbox { return s.gw.outbox }

// Handler returns the server's HTTP handler (every endpoint), for serving
// it elsewhere or calling it in process.
func (s *Server) Handler() http.Handler { return s.handler }

// Status returns what GET /status answers.
func (s *Server) Status() Status { return s.status() }

// Start syncs every instance's overrides once (within ctx), then serves on
// ln and starts the background work: the override polls, the outbox relay,
// the audit writer, the EMF writer and the traffic generator, which run
// until [Server.Shutdown].
func (s *Server) Start(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("start sandbox: already started")
	}
	addr := ln.Addr().String()
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && UsesDefaultTokens(s.cfg.Principals) {
		return fmt.Errorf("start sandbox: %w", defaultTokensError(addr))
	}
	s.hosts.addListen(addr)
	var first sync.WaitGroup // each instance reads the overrides once, in parallel
	for _, in := range s.fleet.instances {
		first.Go(func() { in.SyncOverrides(ctx) })
	}
	first.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start sandbox: %w", err)
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	load, stopLoad := context.WithCancel(bg)
	s.stopBG, s.stopLoad, s.ln = stopBG, stopLoad, ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return bg },
		ErrorLog:          slog.NewLogLogger(s.deps.Logger.Handler(), slog.LevelWarn),
	}
	s.served = make(chan error, 1)
	go func() { s.served <- s.srv.Serve(ln) }()
	s.fleet.pollOverrides(bg, s.deps.Clock, s.cfg.OverridePoll, &s.bg)
	s.gw.outbox.run(bg, s.sims.get(SQS), max(outboxRelayInterval/time.Duration(max(s.cfg.TimeScale, 1)), time.Millisecond), &s.bg)
	s.audit.start(bg)
	if s.emf != nil {
		s.emf.run(bg, s.fleet)
	}
	s.traffic.run(load, s.URL()+PathMCP, &s.load)
	return nil
}

// URL returns the base URL the server listens on ("http://127.0.0.1:8787"),
// or "" before Start.
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Shutdown stops the traffic generator, stops accepting requests and waits
// (within ctx) for those in flight, stops the background work, and flushes
// the audit records and EMF lines still queued.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	s.stopLoad()
	var errs []error
	if err := wait(ctx, &s.load); err != nil {
		errs = append(errs, fmt.Errorf("stop traffic: %w", err))
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stop serving: %w", err))
	}
	if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	s.stopBG()
	if err := wait(ctx, &s.bg); err != nil {
		errs = append(errs, fmt.Errorf("stop background work: %w", err))
	}
	if err := s.audit.close(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.emf != nil {
		// Drained since stopBG, alongside the audit flush; a stalled reader
		// costs one drain time and a line in the log, not the shutdown.
		s.emf.finish(ctx)
	}
	s.srv = nil
	return errors.Join(errs...)
}

// wait waits for wg within ctx.
func wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "instances": len(s.fleet.instances)})
}

func (s *Server) statusHandler(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.status())
}

func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "koshactl sandbox: %d gateway instances (%s..%s)\n\n", len(s.fleet.instances), InstanceName(1), InstanceName(len(s.fleet.instances)))
	fmt.Fprintf(w, "POST %s             JSON-RPC tools/list, tools/call (Authorization: Bearer <token>)\n", PathMCP)
	fmt.Fprintf(w, "GET  %s         Prometheus metrics (kosha_breaker_state{dependency,instance}, kosha_chaos_frozen{instance})\n", PathMetrics)
	fmt.Fprintf(w, "GET  %s          the fleet's breakers, downstreams, outbox\n", PathStatus)
	fmt.Fprintf(w, "GET  %s         liveness\n", PathHealth)
	fmt.Fprintf(w, "     %s[/TARGET]  screening-sim's (or TARGET's) own chaos knob: GET, PUT, DELETE (operator)\n", PathAdminChaos)
}

// knobRequest is the body of PUT /admin/chaos.
type knobRequest struct {
	Fault chaos.Fault `json:"fault"`
	Ms    int         `json:"ms"`
	P     *float64    `json:"p"`
	// For is how long the knob lasts ("30s"); empty means until cleared.
	For string `json:"for"`
}

// knobView is what /admin/chaos answers.
type knobView struct {
	Target string `json:"target"`
	Knob   *Knob  `json:"knob"`
	Outage bool   `json:"outage"`
	// Frozen is true when a knob is set but injects nothing: the fleet is
	// frozen (docs/contracts/freeze.md).
	Frozen bool `json:"frozen,omitempty"`
}

// adminChaos serves screening-sim's own chaos knobs (LLD §9), and those of
// the other simulators at /admin/chaos/{target}: GET shows the knob, PUT or
// POST sets it, DELETE clears it. Changes need an operator's bearer token
// and are audited. Knob durations and latency are real time.
func (s *Server) adminChaos(w http.ResponseWriter, r *http.Request) {
	target := r.PathValue("target")
	if target == "" {
		target = ScreeningSim
	}
	sim := s.sims.get(target)
	if sim == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no simulator %q: the simulators are %v", target, Simulators())})
		return
	}
	view := func() knobView {
		v := knobView{Target: target}
		if k, ok := sim.Knob(); ok {
			v.Knob = &k
			v.Frozen = s.fleet.chaosFrozen(s.deps.Clock.Now())
		}
		_, v.Outage = sim.OutageActive(s.deps.Clock.Now())
		return v
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		writeJSON(w, http.StatusOK, view())
		return
	}
	if r.Method != http.MethodPut && r.Method != http.MethodPost && r.Method != http.MethodDelete {
		w.Header().Set("Allow", "GET, PUT, POST, DELETE")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET, PUT, POST or DELETE"})
		return
	}
	p, ok := s.gw.principals.authenticate(r.Header.Get("Authorization"))
	switch {
	case !ok:
		w.Header().Set("WWW-Authenticate", `Bearer realm="koshactl-sandbox"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "changing a chaos knob needs an operator's bearer token"})
		return
	case p.Role != RoleOperator:
		writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("client %s has role %s; chaos knobs need the operator role", p.Client, p.Role)})
		return
	}
	s.sims.mu.Lock()
	defer s.sims.mu.Unlock()
	now := s.deps.Clock.Now()
	subject := "sandbox#chaos-knob/" + target
	if r.Method == http.MethodDelete {
		before, had := sim.Knob()
		sim.ClearKnob()
		if had {
			s.audit.record(audit.Entry{Actor: p.Client, Action: ActionKnobCleared, Subject: subject, Before: before})
		}
		writeJSON(w, http.StatusOK, view())
		return
	}
	var req knobRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `body: want {"fault": "error|timeout|reset|latency", "ms": N, "p": 0..1, "for": "30s"}: ` + err.Error()})
		return
	}
	k := Knob{Fault: req.Fault, Ms: req.Ms, P: 1, SetBy: p.Client, SetAt: now.UTC()}
	if req.P != nil {
		k.P = *req.P
	}
	if req.For != "" {
		d, err := time.ParseDuration(req.For)
		if err != nil || d <= 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("for %q: want a positive duration like 30s", req.For)})
			return
		}
		if d > chaos.MaxTTL {
			// The chaos header's cap bounds a knob too: a forgotten fault
			// ends on its own within it.
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("for %q: a chaos fault lasts at most %dm (the chaos header's cap): give %dm or less, and set it again to go on",
				req.For, int(chaos.MaxTTL.Minutes()), int(chaos.MaxTTL.Minutes()))})
			return
		}
		k.Until = now.Add(d).UTC()
	}
	before, had := sim.Knob()
	if err := sim.SetKnob(k); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	e := audit.Entry{Actor: p.Client, Action: ActionKnobSet, Subject: subject, After: k}
	if had {
		e.Before = before
	}
	s.audit.record(e)
	writeJSON(w, http.StatusOK, view())
}
