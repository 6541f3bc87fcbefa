package resilience

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// TestDefaultsAreTheLLDTable checks every cell of LLD §1's defaults table.
func TestDefaultsAreTheLLDTable(t *testing.T) {
	cfg := Defaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	ops := []struct {
		dep, op     string
		cap         time.Duration
		attempts    int
		bulkhead    int
		wait        time.Duration
		idempotent  bool
		window      int
		rate        float64
		open        time.Duration
		withBreaker bool
	}{
		{CoreAPI, Reads, 2 * time.Second, 3, 32, 0, true, 20, 0.5, 15 * time.Second, true},
		{CoreAPI, Writes, 4 * time.Second, 1, 16, 0, false, 20, 0.5, 15 * time.Second, true},
		{ScreeningSim, "", 1500 * time.Millisecond, 2, 8, 0, true, 10, 0.5, 30 * time.Second, true},
		{OpenAI, "", 2 * time.Second, 2, 8, 0, true, 10, 0.5, 30 * time.Second, true},
		{Postgres, "", 3 * time.Second, 1, 2, 500 * time.Millisecond, false, 0, 0, 0, false},
	}
	if len(cfg.Operations) != len(ops) {
		t.Fatalf("%d operations, want %d", len(cfg.Operations), len(ops))
	}
	for _, w := range ops {
		o := cfg.Operation(w.dep, w.op)
		if o == nil {
			t.Fatalf("no operation %s/%s", w.dep, w.op)
		}
		if o.AttemptCap != w.cap || o.MaxAttempts != w.attempts || o.Bulkhead != w.bulkhead ||
			o.BulkheadWait != w.wait || o.Idempotent != w.idempotent {
			t.Errorf("%s/%s = %+v", w.dep, w.op, *o)
		}
		d := cfg.Dependency(w.dep)
		if (d.Breaker != nil) != w.withBreaker {
			t.Fatalf("%s breaker presence %v", w.dep, d.Breaker != nil)
		}
		if b := d.Breaker; b != nil && (b.WindowSize != w.window || b.FailureRate != w.rate || b.OpenDuration != w.open ||
			b.Probes != 3 || b.MinCalls != w.window/2) {
			t.Errorf("%s breaker %+v", w.dep, *b)
		}
	}
	if cfg.MaxInFlight != 64 {
		t.Errorf("MaxInFlight %d", cfg.MaxInFlight)
	}
	if m := cfg.Operation(CoreAPI, Reads).Margin; m != 150*time.Millisecond {
		t.Errorf("gateway → core-api margin %v", m)
	}
	if m := cfg.Operation(OpenAI, "").Margin; m != 100*time.Millisecond {
		t.Errorf("inner margin %v", m)
	}
}

func TestDefaultsAreIndependentCopies(t *testing.T) {
	a := Defaults()
	a.Dependency(CoreAPI).Breaker.OpenDuration = time.Minute
	a.Operation(CoreAPI, Reads).MaxAttempts = 5
	b := Defaults()
	if b.Dependency(CoreAPI).Breaker.OpenDuration != 15*time.Second || b.Operation(CoreAPI, Reads).MaxAttempts != 3 {
		t.Fatal("changing one Defaults() value changed another")
	}
	if a.Operation("nope", "") != nil || a.Dependency("nope") != nil {
		t.Fatal("lookup of an unknown name returned settings")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := map[string]func(c *Config){
		"negative max in flight": func(c *Config) { c.MaxInFlight = -1 },
		"duplicate dependency":   func(c *Config) { c.Dependencies = append(c.Dependencies, DependencySettings{Name: OpenAI}) },
		"unnamed dependency":     func(c *Config) { c.Dependencies = append(c.Dependencies, DependencySettings{}) },
		"unknown dependency":     func(c *Config) { c.Operation(OpenAI, "").Dependency = "anthropic" },
		"duplicate operation":    func(c *Config) { c.Operations = append(c.Operations, *c.Operation(OpenAI, "")) },
		"bad breaker":            func(c *Config) { c.Dependency(CoreAPI).Breaker.FailureRate = 2 },
		"bad budget":             func(c *Config) { c.Dependency(CoreAPI).Budget.Cost = -1 },
		"negative refresh":       func(c *Config) { c.Dependency(CoreAPI).ForceRefresh = -time.Second },
		"zero attempts":          func(c *Config) { c.Operation(CoreAPI, Reads).MaxAttempts = 0 },
		"zero attempt cap":       func(c *Config) { c.Operation(CoreAPI, Reads).AttemptCap = 0 },
		"zero bulkhead":          func(c *Config) { c.Operation(CoreAPI, Writes).Bulkhead = 0 },
		"negative bulkhead wait": func(c *Config) { c.Operation(Postgres, "").BulkheadWait = -1 },
		"max delay below base":   func(c *Config) { c.Operation(OpenAI, "").MaxDelay = time.Millisecond },
		"negative margin":        func(c *Config) { c.Operation(OpenAI, "").Margin = -time.Millisecond },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			c := Defaults()
			mutate(&c)
			if err := c.Validate(); !errors.Is(err, ErrInvalidSettings) && !errors.Is(err, circuit.ErrInvalidSettings) {
				t.Fatalf("Validate: %v", err)
			}
			if _, err := NewRegistry(c, Options{}); err == nil {
				t.Fatal("NewRegistry accepted an invalid config")
			}
		})
	}
}

type gaugeMap map[string]circuit.State

func (g gaugeMap) SetBreakerState(dep string, s circuit.State) { g[dep] = s }

func TestRegistry(t *testing.T) {
	gauge := gaugeMap{}
	var changes []circuit.Transition
	r, err := NewRegistry(Defaults(), Options{Logger: slog.New(slog.DiscardHandler), Gauge: gauge,
		OnStateChange: func(tr circuit.Transition) { changes = append(changes, tr) }})
	if err != nil {
		t.Fatal(err)
	}
	reads, ok1 := r.Policy(CoreAPI, Reads)
	writes, ok2 := r.Policy(CoreAPI, Writes)
	if !ok1 || !ok2 {
		t.Fatal("core-api policies missing")
	}
	if reads.Dependency() != writes.Dependency() || reads.Dependency().Breaker == nil || reads.Dependency().Budget == nil {
		t.Fatal("core-api reads and writes must share one breaker and one retry budget")
	}
	if reads.Bulkhead() == writes.Bulkhead() || reads.Bulkhead().Size() != 32 || writes.Bulkhead().Size() != 16 {
		t.Fatal("reads and writes must have their own bulkheads (32 and 16)")
	}
	if _, ok := r.Policy(CoreAPI, ""); ok {
		t.Fatal("core-api has no default profile")
	}
	pg, _ := r.Dependency(Postgres)
	if pg.Breaker != nil || pg.Force != nil {
		t.Fatal("postgres must have no breaker")
	}
	var names []string
	for _, d := range r.Dependencies() {
		names = append(names, d.Name)
	}
	if len(names) != 4 || names[0] != CoreAPI || names[3] != ScreeningSim {
		t.Fatalf("Dependencies() = %v", names)
	}
	if len(gauge) != 3 || gauge[CoreAPI] != circuit.Closed {
		t.Fatalf("gauge after build %v, want the 3 breakers at 0", gauge)
	}
	reads.Dependency().Breaker.ForceOpen()
	if gauge[CoreAPI] != circuit.ForcedOpen || len(changes) != 1 || changes[0].Name != CoreAPI {
		t.Fatalf("gauge %v changes %v", gauge, changes)
	}
	if r.Shedder().MaxInFlight() != 64 {
		t.Fatal("shedder limit")
	}
	tool, err := r.Tool("search_knowledge_base", 8*time.Second, 0, CoreAPI)
	if err != nil || len(tool.Dependencies) != 1 || tool.Dependencies[0] != reads.Dependency() {
		t.Fatalf("Tool: %+v, %v", tool, err)
	}
	if _, err := r.Tool("x", 0, 0, "nope"); !errors.Is(err, ErrInvalidSettings) {
		t.Fatalf("unknown tool dependency: %v", err)
	}
}

func TestRegistryWatchesOverrides(t *testing.T) {
	clk := clocktest.NewFake(t0)
	var mu sync.Mutex
	forced := map[string]bool{OpenAI: true}
	reads := map[string]int{}
	src := circuit.ForceSourceFunc(func(_ context.Context, dep string) (breaker.Force, error) {
		mu.Lock()
		defer mu.Unlock()
		reads[dep]++
		return breaker.Force{Active: forced[dep]}, nil
	})
	cfg := Defaults()
	cfg.Dependency(CoreAPI).ForceRefresh = time.Second
	r, err := NewRegistry(cfg, Options{Clock: clk, Logger: slog.New(slog.DiscardHandler), Force: src})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	openai, _ := r.Dependency(OpenAI)
	core, _ := r.Dependency(CoreAPI)
	pg, _ := r.Dependency(Postgres)
	if !openai.Open(ctx) || core.Open(ctx) || pg.Open(ctx) {
		t.Fatal("only openai is forced")
	}
	mu.Lock()
	forced[CoreAPI], forced[OpenAI] = true, false
	mu.Unlock()
	clk.Advance(time.Second)
	if !core.Open(ctx) {
		t.Fatal("core-api's 1s refresh did not pick up the override")
	}
	if !openai.Open(ctx) {
		t.Fatal("openai re-read its override before the default 5s")
	}
	clk.Advance(4 * time.Second)
	if openai.Open(ctx) {
		t.Fatal("openai's cleared override not applied after 5s")
	}
	mu.Lock()
	defer mu.Unlock()
	if reads[Postgres] != 0 || reads[OpenAI] != 2 || reads[CoreAPI] != 2 {
		t.Fatalf("reads %v", reads)
	}
}
