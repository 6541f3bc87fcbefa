package resilience

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// ErrInvalidSettings is wrapped by constructors and [Config.Validate] when a
// setting is out of range.
var ErrInvalidSettings = errors.New("invalid resilience settings")

// Dependency names of the design's defaults table. They are also the
// chaos-header targets and the breaker#<dependency> override keys.
const (
	CoreAPI      = "core-api"
	ScreeningSim = "screening-sim"
	OpenAI       = "openai"
	Postgres     = "postgres"
)

// Operation names of core-api's two profiles.
const (
	Reads  = "reads"
	Writes = "writes"
)

// OperationSettings configure the policy of one operation on a dependency:
// the per-call layers (bulkhead, retry, attempt timeout).
type OperationSettings struct {
	// Dependency names the [DependencySettings] the operation calls.
	Dependency string
	// Operation distinguishes profiles of one dependency ("reads",
	// "writes"); empty for a dependency with one profile.
	Operation string
	// AttemptCap is the longest one attempt may take.
	AttemptCap time.Duration
	// MaxAttempts counts the first attempt: 1 means no retry.
	MaxAttempts int
	// Idempotent says the operation is safe to repeat. A call of a
	// non-idempotent operation is retried only with an idempotency key.
	Idempotent bool
	// Bulkhead is the most concurrent calls (a pool's max size).
	Bulkhead int
	// BulkheadWait is how long a call may wait for a bulkhead slot (the
	// design: 0–50 ms; a pool wait for PostgreSQL).
	BulkheadWait time.Duration
	// Margin is what this hop subtracts from the deadline: for the attempt
	// timeout and for the X-Request-Deadline it passes on.
	Margin time.Duration
	// BaseDelay and MaxDelay shape the full-jitter backoff: retry n waits
	// uniform in [0, min(MaxDelay, BaseDelay·2ⁿ)].
	BaseDelay, MaxDelay time.Duration
}

func (s OperationSettings) key() string {
	if s.Operation == "" {
		return s.Dependency
	}
	return s.Dependency + "/" + s.Operation
}

func (s OperationSettings) validate() error {
	var errs []string
	if s.AttemptCap <= 0 {
		errs = append(errs, fmt.Sprintf("attempt cap %v must be positive", s.AttemptCap))
	}
	if s.MaxAttempts < 1 {
		errs = append(errs, fmt.Sprintf("max attempts %d must be at least 1", s.MaxAttempts))
	}
	if s.Bulkhead < 1 {
		errs = append(errs, fmt.Sprintf("bulkhead %d must be at least 1", s.Bulkhead))
	}
	if s.BulkheadWait < 0 {
		errs = append(errs, fmt.Sprintf("bulkhead wait %v is negative", s.BulkheadWait))
	}
	if s.Margin < 0 {
		errs = append(errs, fmt.Sprintf("margin %v is negative", s.Margin))
	}
	if s.BaseDelay < 0 || s.MaxDelay < s.BaseDelay {
		errs = append(errs, fmt.Sprintf("backoff base %v and max %v need 0 <= base <= max", s.BaseDelay, s.MaxDelay))
	}
	if len(errs) > 0 {
		return fmt.Errorf("operation %s: %s: %w", s.key(), strings.Join(errs, "; "), ErrInvalidSettings)
	}
	return nil
}

// DependencySettings configure what operations on one dependency share.
type DependencySettings struct {
	// Name is the dependency's name; it must be unique in a [Config].
	Name string
	// Breaker configures the dependency's circuit breaker (Name, Clock,
	// Logger, Gauge and OnStateChange are filled in from [Options]). Nil
	// means no breaker.
	Breaker *circuit.Settings
	// Budget configures the retry budget.
	Budget BudgetSettings
	// ForceRefresh is the longest the forced_open override is cached. Zero
	// means 5 s.
	ForceRefresh time.Duration
}

// Config is the complete resilience configuration of one process.
type Config struct {
	// MaxInFlight is the load shedder's limit on requests in flight per
	// instance. Zero means 64.
	MaxInFlight int
	// Dependencies and Operations: see [Defaults] for the design's table.
	Dependencies []DependencySettings
	Operations   []OperationSettings
}

// Defaults returns the design's per-dependency defaults (LLD §1), as a fresh
// value the caller may change:
//
//	dependency        attempt cap  attempts  bulkhead      breaker          open
//	core-api reads    2.0 s        3         32            20 calls / 50%   15 s
//	core-api writes   4.0 s        1         16            20 calls / 50%   15 s
//	screening-sim     1.5 s        2         8             10 calls / 50%   30 s
//	openai            2.0 s        2         8             10 calls / 50%   30 s
//	postgres          3 s stmt     1         2 (wait 0.5s) n/a              n/a
//
// Values the design does not state are chosen here and marked so in
// docs/dataplane.md: min calls (half the window, so a dependency failing
// every call opens after as many failures as a full window needs at 50%),
// the backoff (base 100 ms, max 1 s), a bulkhead wait of 0 for HTTP
// dependencies, and a margin of 150 ms toward core-api (the gateway hop)
// and 100 ms elsewhere.
func Defaults() Config {
	brk := func(window int, open time.Duration) *circuit.Settings {
		return &circuit.Settings{WindowSize: window, MinCalls: window / 2, FailureRate: 0.5,
			OpenDuration: open, Probes: circuit.DefaultProbes}
	}
	return Config{
		MaxInFlight: DefaultMaxInFlight,
		Dependencies: []DependencySettings{
			{Name: CoreAPI, Breaker: brk(20, 15*time.Second)},
			{Name: ScreeningSim, Breaker: brk(10, 30*time.Second)},
			{Name: OpenAI, Breaker: brk(10, 30*time.Second)},
			{Name: Postgres},
		},
		Operations: []OperationSettings{
			{Dependency: CoreAPI, Operation: Reads, AttemptCap: 2 * time.Second, MaxAttempts: 3, Idempotent: true,
				Bulkhead: 32, Margin: GatewayMargin, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second},
			{Dependency: CoreAPI, Operation: Writes, AttemptCap: 4 * time.Second, MaxAttempts: 1,
				Bulkhead: 16, Margin: GatewayMargin, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second},
			{Dependency: ScreeningSim, AttemptCap: 1500 * time.Millisecond, MaxAttempts: 2, Idempotent: true,
				Bulkhead: 8, Margin: InnerMargin, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second},
			{Dependency: OpenAI, AttemptCap: 2 * time.Second, MaxAttempts: 2, Idempotent: true,
				Bulkhead: 8, Margin: InnerMargin, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second},
			{Dependency: Postgres, AttemptCap: 3 * time.Second, MaxAttempts: 1,
				Bulkhead: 2, BulkheadWait: 500 * time.Millisecond, Margin: InnerMargin},
		},
	}
}

// Operation returns the settings of dependency's operation, for changing a
// default in place, or nil.
func (c *Config) Operation(dependency, operation string) *OperationSettings {
	for i := range c.Operations {
		if o := &c.Operations[i]; o.Dependency == dependency && o.Operation == operation {
			return o
		}
	}
	return nil
}

// Dependency returns the settings of the named dependency, for changing a
// default in place, or nil.
func (c *Config) Dependency(name string) *DependencySettings {
	for i := range c.Dependencies {
		if d := &c.Dependencies[i]; d.Name == name {
			return d
		}
	}
	return nil
}

// Validate checks the configuration as a whole: unique names, operations on
// known dependencies, every value in range (breaker settings included).
func (c Config) Validate() error {
	var errs []error
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("max in flight %d is negative: %w", c.MaxInFlight, ErrInvalidSettings))
	}
	deps := map[string]bool{}
	for _, d := range c.Dependencies {
		switch {
		case d.Name == "":
			errs = append(errs, fmt.Errorf("a dependency has no name: %w", ErrInvalidSettings))
		case deps[d.Name]:
			errs = append(errs, fmt.Errorf("dependency %s listed twice: %w", d.Name, ErrInvalidSettings))
		}
		deps[d.Name] = true
		if d.Breaker != nil {
			s := *d.Breaker
			s.Name = d.Name
			if _, err := circuit.New(s); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := NewRetryBudget(d.Budget); err != nil {
			errs = append(errs, fmt.Errorf("dependency %s: %w", d.Name, err))
		}
		if d.ForceRefresh < 0 {
			errs = append(errs, fmt.Errorf("dependency %s: negative override refresh %v: %w", d.Name, d.ForceRefresh, ErrInvalidSettings))
		}
	}
	ops := map[string]bool{}
	for _, o := range c.Operations {
		if !deps[o.Dependency] {
			errs = append(errs, fmt.Errorf("operation %s: unknown dependency %q: %w", o.key(), o.Dependency, ErrInvalidSettings))
		}
		if ops[o.key()] {
			errs = append(errs, fmt.Errorf("operation %s listed twice: %w", o.key(), ErrInvalidSettings))
		}
		ops[o.key()] = true
		if err := o.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Registry holds the built layers of a [Config]: one [Dependency] per
// dependency, one [Policy] per operation, and the load shedder.
type Registry struct {
	deps     map[string]*Dependency
	policies map[string]*Policy
	shedder  *LoadShedder
}

// NewRegistry validates cfg and builds its layers.
func NewRegistry(cfg Config, opts Options) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("build resilience registry: %w", err)
	}
	opts = opts.withDefaults()
	r := &Registry{
		deps:     make(map[string]*Dependency, len(cfg.Dependencies)),
		policies: make(map[string]*Policy, len(cfg.Operations)),
		shedder:  NewLoadShedder(cfg.MaxInFlight, opts.Clock),
	}
	for _, ds := range cfg.Dependencies {
		d, err := NewDependency(ds, opts)
		if err != nil {
			return nil, fmt.Errorf("build resilience registry: %w", err)
		}
		r.deps[ds.Name] = d
	}
	for _, op := range cfg.Operations {
		p, err := NewPolicy(r.deps[op.Dependency], op, opts)
		if err != nil {
			return nil, fmt.Errorf("build resilience registry: %w", err)
		}
		r.policies[op.key()] = p
	}
	return r, nil
}

// NewDependency builds the shared layers of one dependency.
func NewDependency(s DependencySettings, opts Options) (*Dependency, error) {
	opts = opts.withDefaults()
	d := &Dependency{Name: s.Name}
	if s.Breaker != nil {
		bs := *s.Breaker
		bs.Name = s.Name
		bs.Clock = opts.Clock
		bs.Logger = opts.Logger
		bs.Gauge = opts.Gauge
		bs.OnStateChange = opts.OnStateChange
		if bs.Classify == nil {
			bs.Classify = func(err error) circuit.Outcome { return Classify(err).Outcome }
		}
		b, err := circuit.New(bs)
		if err != nil {
			return nil, err
		}
		d.Breaker = b
		if opts.Force != nil {
			d.Force = circuit.NewForceWatcher(b, opts.Force, circuit.WatcherSettings{RefreshInterval: s.ForceRefresh})
		}
	}
	budget, err := NewRetryBudget(s.Budget)
	if err != nil {
		return nil, fmt.Errorf("dependency %s: %w", s.Name, err)
	}
	d.Budget = budget
	return d, nil
}

// Policy returns the policy of dependency's operation ("" for a dependency
// with one profile).
func (r *Registry) Policy(dependency, operation string) (*Policy, bool) {
	p, ok := r.policies[OperationSettings{Dependency: dependency, Operation: operation}.key()]
	return p, ok
}

// Dependency returns the named dependency.
func (r *Registry) Dependency(name string) (*Dependency, bool) {
	d, ok := r.deps[name]
	return d, ok
}

// Dependencies returns every dependency, sorted by name.
func (r *Registry) Dependencies() []*Dependency {
	out := make([]*Dependency, 0, len(r.deps))
	for _, d := range r.deps {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *Dependency) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Shedder returns the instance's load shedder.
func (r *Registry) Shedder() *LoadShedder { return r.shedder }

// Tool builds a [Tool] whose dependencies are looked up by name.
func (r *Registry) Tool(name string, budget, minBudget time.Duration, dependencies ...string) (Tool, error) {
	t := Tool{Name: name, Budget: budget, MinBudget: minBudget}
	for _, n := range dependencies {
		d, ok := r.deps[n]
		if !ok {
			return Tool{}, fmt.Errorf("tool %s: unknown dependency %q: %w", name, n, ErrInvalidSettings)
		}
		t.Dependencies = append(t.Dependencies, d)
	}
	return t, nil
}
