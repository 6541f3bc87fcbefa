package sandbox

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// ErrInvalidConfig is wrapped by [Config.Validate] (and so by [New]) and by
// [Config.LoadFile] when a setting cannot work.
var ErrInvalidConfig = errors.New("invalid sandbox configuration")

// The downstreams of the design, simulated in process. They are also the
// breaker and chaos-target names.
const (
	CoreAPI      = resilience.CoreAPI
	ScreeningSim = resilience.ScreeningSim
	OpenAI       = resilience.OpenAI
	Postgres     = resilience.Postgres
)

// SQS is the queue core-api's outbox relay publishes to. It is simulated
// like the downstreams (a knob at /admin/chaos/sqs takes it down) but no
// tool calls it, so it has no breaker, no profile and is no chaos target.
const SQS = "sqs"

// Downstreams returns the simulated downstreams, sorted.
func Downstreams() []string { return []string{CoreAPI, OpenAI, Postgres, ScreeningSim} }

// Simulators returns every simulator's name, sorted: the downstreams and
// SQS.
func Simulators() []string { return []string{CoreAPI, OpenAI, Postgres, ScreeningSim, SQS} }

// The MCP tools of the design.
const (
	ToolSearchKnowledgeBase = "search_knowledge_base"
	ToolScreenEntity        = "screen_entity"
	ToolRaiseDispute        = "raise_dispute"
	ToolFlagTransaction     = "flag_transaction_for_review"
	ToolGetServiceHealth    = "get_service_health"
)

// Tools returns every tool name, sorted.
func Tools() []string {
	return []string{ToolFlagTransaction, ToolGetServiceHealth, ToolRaiseDispute, ToolScreenEntity, ToolSearchKnowledgeBase}
}

// Defaults of the settings the LLD does not state (docs/sandbox.md).
const (
	// DefaultInstances is the size of the fleet.
	DefaultInstances = 4
	// MaxInstances bounds the fleet (each instance costs a few goroutines).
	MaxInstances = 1024
	// DefaultListen is the one address the sandbox serves on.
	DefaultListen = "127.0.0.1:8787"
	// DefaultToolBudget is the request budget of a tool the LLD gives none.
	DefaultToolBudget = 8 * time.Second
	// DefaultDeferRetryAfter is the retry_after_s of a deferred screening
	// when the breaker does not say how long it stays open: screening-sim's
	// open duration.
	DefaultDeferRetryAfter = 30 * time.Second
	// DefaultAuditInterval: at most one "chaos.ignored" audit record per
	// client and reason per interval; the rest are counted into a summary.
	DefaultAuditInterval = 10 * time.Second
	// DefaultAuditMaxPerInterval bounds ignored-header audit records across
	// all clients per interval.
	DefaultAuditMaxPerInterval = 100
	// DefaultEMFService is the service dimension of EMF lines.
	DefaultEMFService = "mcp-gateway"
	// DefaultEMFInterval is how often every gauge is written to the EMF file
	// besides its changes.
	DefaultEMFInterval = time.Minute
	// DefaultTrafficInFlight bounds the traffic generator's requests in
	// flight; arrivals beyond it are dropped and counted.
	DefaultTrafficInFlight = 256
	// MaxRPS bounds the traffic generator's rate.
	MaxRPS = 100000
	// MaxTimeScale bounds [Config.TimeScale].
	MaxTimeScale = 1000
)

// Role is what a principal may do.
type Role string

// The roles of the design.
const (
	// RoleOperator may send chaos headers and change the /admin/chaos knobs.
	RoleOperator Role = "operator"
	// RoleAgent calls tools.
	RoleAgent Role = "agent"
)

// Principal is a bearer token's identity: the client its rate-limit bucket
// is keyed by, and its role.
type Principal struct {
	// Token is the bearer token. It is never printed, logged or audited.
	Token string `yaml:"token"`
	// Client is the client id (the bucket rl#<client>, the audit actor).
	Client string `yaml:"client"`
	// Role is operator or agent.
	Role Role `yaml:"role"`
}

// DefaultPrincipals returns the documented default tokens: operator-token
// (client ops-1, operator) and agent-token (client agent-1, agent). They are
// for a sandbox on loopback; a config file replaces them.
func DefaultPrincipals() []Principal {
	return []Principal{
		{Token: "operator-token", Client: "ops-1", Role: RoleOperator},
		{Token: "agent-token", Client: "agent-1", Role: RoleAgent},
	}
}

// Latency is a downstream's latency distribution: log-normal through its
// median and 99th percentile. Zero P50 means no latency at all.
type Latency struct {
	P50 time.Duration `yaml:"p50"`
	P99 time.Duration `yaml:"p99"`
}

// Outage is a periodic outage of a downstream: during [Offset + k·Every,
// Offset + k·Every + For) every call gets Fault.
type Outage struct {
	// Every is the period. It must exceed For.
	Every time.Duration `yaml:"every"`
	// For is how long each outage lasts.
	For time.Duration `yaml:"for"`
	// Offset shifts the first outage from the sandbox's start.
	Offset time.Duration `yaml:"offset,omitempty"`
	// Fault is what calls get: error (503), timeout (hang until the
	// attempt's timeout), reset (connection error) or latency (Ms more).
	Fault chaos.Fault `yaml:"fault"`
	// Ms is the added latency of a latency outage.
	Ms int `yaml:"ms,omitempty"`
}

// DownstreamProfile is how a simulated downstream behaves on its own,
// before chaos headers and knobs.
type DownstreamProfile struct {
	Latency Latency `yaml:"latency"`
	// ErrorRate, TimeoutRate and ResetRate are the probabilities (0..1) that
	// a call answers 503, hangs until its attempt's timeout, or fails with a
	// connection reset. Their sum is at most 1.
	ErrorRate   float64 `yaml:"error-rate"`
	TimeoutRate float64 `yaml:"timeout-rate"`
	ResetRate   float64 `yaml:"reset-rate"`
	// Outages are periodic outages.
	Outages []Outage `yaml:"outages,omitempty"`
}

// ToolSettings are a tool's deadline settings (LLD §2 and §7).
type ToolSettings struct {
	// Budget is the request budget: the deadline is now + Budget unless the
	// request's X-Request-Deadline is earlier.
	Budget time.Duration `yaml:"budget"`
	// MinBudget is the least remaining budget worth starting with (300 ms).
	MinBudget time.Duration `yaml:"min-budget"`
}

// TrafficSettings configure the synthetic traffic generator.
type TrafficSettings struct {
	// RPS is the mean arrival rate (Poisson). Zero disables the generator.
	RPS float64 `yaml:"rps"`
	// Clients is how many synthetic clients (traffic-1..traffic-N, role
	// agent) share the load. Zero means enough that each stays under 75% of
	// its rate-limit refill, so the LLD's limit rarely bites.
	Clients int `yaml:"clients"`
	// MaxInFlight bounds the generator's concurrent requests. Zero means 256.
	MaxInFlight int `yaml:"max-in-flight,omitempty"`
	// Mix weights the tools; absent tools are not called. A file's mix
	// replaces it whole.
	Mix map[string]float64 `yaml:"mix,omitempty"`
}

// AuditSettings bound the audit records of ignored chaos headers, so a
// client flooding bad headers at 1000 rps writes a handful of records, not
// 1000 a second.
type AuditSettings struct {
	// Interval: the first ignored header of a client for a reason is
	// recorded at once; the rest within Interval are counted and recorded as
	// one summary when it ends. Zero means 10 s.
	Interval time.Duration `yaml:"interval"`
	// MaxPerInterval bounds records across all clients per Interval; past
	// it, records are counted into one summary. Zero means 100.
	MaxPerInterval int `yaml:"max-per-interval"`
}

// EMFSettings shape the CloudWatch embedded-metric-format lines.
type EMFSettings struct {
	// File is where the command appends the lines (the --emf flag overrides
	// it); the [Server] writes to [Deps].EMF and does not read it.
	File string `yaml:"file,omitempty"`
	// Namespace of the metric. Empty means Kosha/Resilience.
	Namespace string `yaml:"namespace,omitempty"`
	// Service is the service dimension. Empty means mcp-gateway.
	Service string `yaml:"service,omitempty"`
	// Interval: every gauge is also written this often. Zero means 1 min.
	Interval time.Duration `yaml:"interval,omitempty"`
	// InstanceDimension adds the one instance-level dimension set
	// (dependency, service, instance), which costs one custom metric per
	// instance and dependency. False (the default) keeps the instance a
	// log property only: the fleet sets cost one metric per dependency.
	InstanceDimension bool `yaml:"instance-dimension"`
}

// Config is the whole sandbox configuration. Durations are in LLD time:
// [Config.TimeScale] divides them all when the sandbox is built.
// [Config.LoadFile] reads a YAML file over it (the yaml tags of its parts
// name the file's keys) and [Config.MarshalFile] prints it as one.
type Config struct {
	// Instances is the fleet size (gw-1..gw-N).
	Instances int
	// Listen is the address the command listens on (Start takes a
	// listener); port 0 picks a free port.
	Listen string
	// Profile names the downstream profile Downstreams came from, for
	// display.
	Profile string
	// TimeScale runs every duration of the configuration (attempt caps,
	// budgets, margins, backoff, open durations, the override cache,
	// downstream latency and outages, defer hints) this many times faster.
	// 1 is the LLD's time; tests use 20 or so. Rate limits, chaos header
	// lifetimes and audit intervals are not scaled.
	TimeScale float64
	// ChaosEnabled is CHAOS_ENABLED: without it every chaos header is
	// ignored (and audited).
	ChaosEnabled bool
	// ChaosTargets are the targets a header may name; nil means the four
	// downstreams.
	ChaosTargets []chaos.Target
	// Resilience is the data plane's configuration, one copy per instance.
	Resilience resilience.Config
	// OverrideRefresh is the breaker override cache period (5 s).
	OverrideRefresh time.Duration
	// OverridePoll is how often an idle instance syncs its breakers (so
	// its gauge moves without traffic: open → half-open); it also syncs the
	// instant an override cache goes stale, so a force or a clear reaches
	// every instance within OverrideRefresh. Zero means OverrideRefresh/5.
	OverridePoll time.Duration
	// RateLimit are the per-client bucket limits; they must be the
	// context's, so `koshactl ratelimit` computes what the sandbox enforces.
	RateLimit ratelimit.Limits
	// Principals map bearer tokens to clients and roles.
	Principals []Principal
	// AllowedHosts are host names /mcp and /admin accept in a request's
	// Host header besides localhost, 127.0.0.1, [::1] and the listen
	// address's own host (a LAN name, a tunnel's name). Any other Host is
	// refused (403), which defeats DNS rebinding from a browser.
	AllowedHosts []string
	// Downstreams holds one profile per simulated downstream.
	Downstreams map[string]DownstreamProfile
	// Tools holds each tool's deadline settings.
	Tools map[string]ToolSettings
	// DeferRetryAfter is the retry_after_s of a deferred screening when the
	// breaker gives no better hint.
	DeferRetryAfter time.Duration
	// IgnoreOverrides lists instances (by number: 3 is gw-3) that never
	// read the breaker overrides, as an instance pointed at the wrong table
	// or running an old build would: a test knob, so that `--wait` timing
	// out and `breaker status` saying "not obeyed" can be seen and tested.
	IgnoreOverrides []int
	Traffic         TrafficSettings
	Audit           AuditSettings
	EMF             EMFSettings
}

// DefaultConfig returns the LLD's settings: 4 instances, the resilience
// defaults of resilience.Defaults, a 5 s override cache, the LLD's rate
// limits, the default principals, the healthy profile, chaos disabled and
// no traffic.
func DefaultConfig() Config {
	res := resilience.Defaults()
	tools := map[string]ToolSettings{}
	for _, t := range Tools() {
		tools[t] = ToolSettings{Budget: DefaultToolBudget, MinBudget: resilience.DefaultMinBudget}
	}
	tools[ToolScreenEntity] = ToolSettings{Budget: 5 * time.Second, MinBudget: resilience.DefaultMinBudget}
	tools[ToolGetServiceHealth] = ToolSettings{Budget: time.Second, MinBudget: 50 * time.Millisecond}
	profile, _ := Profile(ProfileHealthy)
	return Config{
		Instances:       DefaultInstances,
		Listen:          DefaultListen,
		Profile:         ProfileHealthy,
		TimeScale:       1,
		Resilience:      res,
		OverrideRefresh: circuit.DefaultRefreshInterval,
		RateLimit:       ratelimit.DefaultLimits(),
		Principals:      DefaultPrincipals(),
		Downstreams:     profile,
		Tools:           tools,
		DeferRetryAfter: DefaultDeferRetryAfter,
		Traffic:         TrafficSettings{Mix: DefaultMix()},
	}
}

// DefaultMix is the traffic generator's default tool mix: mostly searches
// and screenings, some writes, a few health checks.
func DefaultMix() map[string]float64 {
	return map[string]float64{
		ToolSearchKnowledgeBase: 50,
		ToolScreenEntity:        25,
		ToolRaiseDispute:        8,
		ToolFlagTransaction:     7,
		ToolGetServiceHealth:    10,
	}
}

// Clone returns a deep copy, so a caller may change it freely.
func (c Config) Clone() Config {
	out := c
	out.ChaosTargets = slices.Clone(c.ChaosTargets)
	out.Resilience.Dependencies = slices.Clone(c.Resilience.Dependencies)
	for i, d := range out.Resilience.Dependencies {
		if d.Breaker != nil {
			b := *d.Breaker
			out.Resilience.Dependencies[i].Breaker = &b
		}
	}
	out.Resilience.Operations = slices.Clone(c.Resilience.Operations)
	out.Principals = slices.Clone(c.Principals)
	out.AllowedHosts = slices.Clone(c.AllowedHosts)
	out.IgnoreOverrides = slices.Clone(c.IgnoreOverrides)
	out.Downstreams = make(map[string]DownstreamProfile, len(c.Downstreams))
	for k, v := range c.Downstreams {
		v.Outages = slices.Clone(v.Outages)
		out.Downstreams[k] = v
	}
	out.Tools = make(map[string]ToolSettings, len(c.Tools))
	for k, v := range c.Tools {
		out.Tools[k] = v
	}
	out.Traffic.Mix = make(map[string]float64, len(c.Traffic.Mix))
	for k, v := range c.Traffic.Mix {
		out.Traffic.Mix[k] = v
	}
	return out
}

// Validate checks the configuration as a whole and returns every problem at
// once, each wrapping [ErrInvalidConfig].
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...)))
	}
	if c.Instances < 1 || c.Instances > MaxInstances {
		bad("instances %d: use 1 to %d", c.Instances, MaxInstances)
	}
	if math.IsNaN(c.TimeScale) || c.TimeScale < 1 || c.TimeScale > MaxTimeScale {
		bad("time scale %v: use 1 (the LLD's time) to %d", c.TimeScale, MaxTimeScale)
	}
	if err := c.Resilience.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidConfig, err))
	}
	for _, dep := range Downstreams() {
		if c.Resilience.Dependency(dep) == nil {
			bad("resilience settings have no dependency %s", dep)
		}
	}
	for _, op := range []struct{ dep, op string }{{CoreAPI, resilience.Reads}, {CoreAPI, resilience.Writes},
		{ScreeningSim, ""}, {OpenAI, ""}, {Postgres, ""}} {
		if c.Resilience.Operation(op.dep, op.op) == nil {
			bad("resilience settings have no operation %s", strings.TrimSuffix(op.dep+"/"+op.op, "/"))
		}
	}
	if c.OverrideRefresh <= 0 {
		bad("override refresh %v must be positive", c.OverrideRefresh)
	}
	if c.OverridePoll < 0 {
		bad("override poll %v is negative", c.OverridePoll)
	}
	seenIgnore := map[int]bool{}
	for _, n := range c.IgnoreOverrides {
		switch {
		case n < 1 || n > c.Instances:
			bad("ignore-overrides instance %d: the fleet is gw-1..gw-%d; name an instance by its number", n, c.Instances)
		case seenIgnore[n]:
			bad("ignore-overrides instance %d is named twice", n)
		}
		seenIgnore[n] = true
	}
	if err := c.RateLimit.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidConfig, err))
	}
	if len(c.ChaosTargets) > 0 {
		for _, t := range c.ChaosTargets {
			if _, err := chaos.ParseTarget(string(t)); err != nil {
				bad("chaos target %q: %v", t, err)
			}
		}
	}
	errs = append(errs, validatePrincipals(c.Principals)...)
	if c.Listen != "" && !IsLoopback(c.Listen) && UsesDefaultTokens(c.Principals) {
		errs = append(errs, defaultTokensError(c.Listen))
	}
	for _, h := range c.AllowedHosts {
		if !validHost(h) {
			bad("allowed host %q: give a bare host name or address, like sandbox.lan or 192.168.1.20 (no scheme, port or path)", h)
		}
	}
	for _, name := range sortedKeys(c.Downstreams) {
		if !slices.Contains(Downstreams(), name) {
			bad("downstream %q: the sandbox simulates %s", name, strings.Join(Downstreams(), ", "))
			continue
		}
		if err := c.Downstreams[name].validate(); err != nil {
			bad("downstream %s: %v", name, err)
		}
	}
	for _, name := range Downstreams() {
		if _, ok := c.Downstreams[name]; !ok {
			bad("downstream %s has no profile", name)
		}
	}
	for _, name := range Tools() {
		t, ok := c.Tools[name]
		switch {
		case !ok:
			bad("tool %s has no settings", name)
		case t.Budget <= 0:
			bad("tool %s: budget %v must be positive", name, t.Budget)
		case t.MinBudget < 0 || t.MinBudget > t.Budget:
			bad("tool %s: min budget %v must be between 0 and the budget %v", name, t.MinBudget, t.Budget)
		}
	}
	for _, name := range sortedKeys(c.Tools) {
		if !slices.Contains(Tools(), name) {
			bad("tool %q: the tools are %s", name, strings.Join(Tools(), ", "))
		}
	}
	if c.DeferRetryAfter <= 0 {
		bad("defer retry-after %v must be positive", c.DeferRetryAfter)
	}
	errs = append(errs, c.Traffic.validate()...)
	if c.Audit.Interval < 0 || c.Audit.MaxPerInterval < 0 {
		bad("audit interval %v and max per interval %d must not be negative", c.Audit.Interval, c.Audit.MaxPerInterval)
	}
	if c.EMF.Interval < 0 {
		bad("emf interval %v is negative", c.EMF.Interval)
	}
	return errors.Join(errs...)
}

// defaultTokensError refuses to serve the documented default tokens beyond
// loopback, where anyone who has read the docs could use operator-token.
func defaultTokensError(listen string) error {
	return fmt.Errorf("%w: listen %s is not a loopback address and the documented default tokens (operator-token, agent-token) are in use: set your own under principals: in a --config FILE, or listen on 127.0.0.1", ErrInvalidConfig, listen)
}

func validatePrincipals(ps []Principal) []error {
	var errs []error
	tokens := map[string]bool{}
	clients := map[string]Role{}
	for i, p := range ps {
		switch {
		case p.Token == "":
			errs = append(errs, fmt.Errorf("%w: principal %d (%s) has no token", ErrInvalidConfig, i+1, p.Client))
		case tokens[p.Token]:
			errs = append(errs, fmt.Errorf("%w: principal %d (%s) reuses another principal's token", ErrInvalidConfig, i+1, p.Client))
		case strings.ContainsAny(p.Token, " \t\r\n"):
			errs = append(errs, fmt.Errorf("%w: principal %d (%s): a bearer token has no spaces", ErrInvalidConfig, i+1, p.Client))
		}
		tokens[p.Token] = true
		if err := ratelimit.ValidateClientID(p.Client); err != nil {
			errs = append(errs, fmt.Errorf("%w: principal %d: %w", ErrInvalidConfig, i+1, err))
		}
		if p.Role != RoleOperator && p.Role != RoleAgent {
			errs = append(errs, fmt.Errorf("%w: principal %d (%s): role %q: use operator or agent", ErrInvalidConfig, i+1, p.Client, p.Role))
		}
		if r, ok := clients[p.Client]; ok && r != p.Role {
			errs = append(errs, fmt.Errorf("%w: client %s has two roles; one client, one role", ErrInvalidConfig, p.Client))
		}
		clients[p.Client] = p.Role
		if strings.HasPrefix(p.Client, trafficClientPrefix) {
			errs = append(errs, fmt.Errorf("%w: client %s: ids starting %q belong to the traffic generator", ErrInvalidConfig, p.Client, trafficClientPrefix))
		}
	}
	return errs
}

func (p DownstreamProfile) validate() error {
	var problems []string
	for name, r := range map[string]float64{"error rate": p.ErrorRate, "timeout rate": p.TimeoutRate, "reset rate": p.ResetRate} {
		if math.IsNaN(r) || r < 0 || r > 1 {
			problems = append(problems, fmt.Sprintf("%s %v not in 0..1", name, r))
		}
	}
	if s := p.ErrorRate + p.TimeoutRate + p.ResetRate; s > 1+1e-9 {
		problems = append(problems, fmt.Sprintf("error, timeout and reset rates add up to %v, more than 1", s))
	}
	if p.Latency.P50 < 0 || p.Latency.P99 < 0 || (p.Latency.P99 > 0 && p.Latency.P99 < p.Latency.P50) {
		problems = append(problems, fmt.Sprintf("latency p50 %v and p99 %v need 0 <= p50 <= p99", p.Latency.P50, p.Latency.P99))
	}
	for i, o := range p.Outages {
		switch {
		case o.Every <= 0 || o.For <= 0 || o.For >= o.Every:
			problems = append(problems, fmt.Sprintf("outage %d: need 0 < for (%v) < every (%v)", i+1, o.For, o.Every))
		case o.Offset < 0:
			problems = append(problems, fmt.Sprintf("outage %d: negative offset %v", i+1, o.Offset))
		case !o.Fault.Valid():
			problems = append(problems, fmt.Sprintf("outage %d: fault not set (latency, error, timeout or reset)", i+1))
		case o.Fault == chaos.FaultLatency && (o.Ms < chaos.MinMs || o.Ms > chaos.MaxMs):
			problems = append(problems, fmt.Sprintf("outage %d: a latency outage needs ms in %d..%d", i+1, chaos.MinMs, chaos.MaxMs))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func (t TrafficSettings) validate() []error {
	var errs []error
	if math.IsNaN(t.RPS) || t.RPS < 0 || t.RPS > MaxRPS {
		errs = append(errs, fmt.Errorf("%w: traffic rps %v: use 0 (off) to %d", ErrInvalidConfig, t.RPS, MaxRPS))
	}
	if t.Clients < 0 || t.Clients > 10000 {
		errs = append(errs, fmt.Errorf("%w: traffic clients %d: use 0 (automatic) to 10000", ErrInvalidConfig, t.Clients))
	}
	if t.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("%w: traffic max in flight %d is negative", ErrInvalidConfig, t.MaxInFlight))
	}
	total := 0.0
	for _, name := range sortedKeys(t.Mix) {
		w := t.Mix[name]
		if !slices.Contains(Tools(), name) {
			errs = append(errs, fmt.Errorf("%w: traffic mix names %q: the tools are %s", ErrInvalidConfig, name, strings.Join(Tools(), ", ")))
			continue
		}
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			errs = append(errs, fmt.Errorf("%w: traffic mix weight of %s is %v; use a number >= 0", ErrInvalidConfig, name, w))
			continue
		}
		total += w
	}
	if t.RPS > 0 && total <= 0 {
		errs = append(errs, fmt.Errorf("%w: traffic at %v rps needs a tool mix with a positive weight", ErrInvalidConfig, t.RPS))
	}
	return errs
}

// scaled returns c with every LLD-time duration divided by c.TimeScale (see
// its doc), and defaults filled in.
func (c Config) scaled() Config {
	c = c.Clone()
	k := c.TimeScale
	if k <= 0 {
		k = 1
	}
	d := func(v time.Duration) time.Duration {
		if v <= 0 {
			return v
		}
		return max(time.Duration(float64(v)/k), time.Microsecond)
	}
	for i := range c.Resilience.Operations {
		o := &c.Resilience.Operations[i]
		o.AttemptCap, o.BulkheadWait, o.Margin = d(o.AttemptCap), d(o.BulkheadWait), d(o.Margin)
		o.BaseDelay, o.MaxDelay = d(o.BaseDelay), d(o.MaxDelay)
	}
	if c.OverridePoll == 0 {
		c.OverridePoll = c.OverrideRefresh / 5
	}
	c.OverrideRefresh, c.OverridePoll = d(c.OverrideRefresh), d(c.OverridePoll)
	for i := range c.Resilience.Dependencies {
		dep := &c.Resilience.Dependencies[i]
		if dep.Breaker != nil {
			dep.Breaker.OpenDuration = d(dep.Breaker.OpenDuration)
		}
		dep.ForceRefresh = c.OverrideRefresh
	}
	for name, p := range c.Downstreams {
		p.Latency.P50, p.Latency.P99 = d(p.Latency.P50), d(p.Latency.P99)
		for i := range p.Outages {
			o := &p.Outages[i]
			o.Every, o.For, o.Offset = d(o.Every), d(o.For), d(o.Offset)
			if o.Fault == chaos.FaultLatency {
				o.Ms = max(1, int(float64(o.Ms)/k))
			}
		}
		c.Downstreams[name] = p
	}
	for name, t := range c.Tools {
		t.Budget, t.MinBudget = d(t.Budget), d(t.MinBudget)
		c.Tools[name] = t
	}
	c.DeferRetryAfter = d(c.DeferRetryAfter)
	if c.Audit.Interval == 0 {
		c.Audit.Interval = DefaultAuditInterval
	}
	if c.Audit.MaxPerInterval == 0 {
		c.Audit.MaxPerInterval = DefaultAuditMaxPerInterval
	}
	if c.EMF.Service == "" {
		c.EMF.Service = DefaultEMFService
	}
	if c.EMF.Interval == 0 {
		c.EMF.Interval = DefaultEMFInterval
	}
	if c.Traffic.MaxInFlight == 0 {
		c.Traffic.MaxInFlight = DefaultTrafficInFlight
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
