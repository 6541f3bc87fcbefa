package drilltest

import (
	"context"
	"github.com/kosha-platform/koshactl/internal/lever"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Env is a drill test environment: an in-memory store (or another, see
// [NewEnvOn]), the [Fleet] behind an in-process HTTP client (its metrics at
// ${env.FLEET}/metrics), a chaos key, and the services on them.
type Env struct {
	T testing.TB
	// Store is the in-memory store (nil on another store).
	Store *Store
	// Table is the store the Env is on.
	Table     store.Store
	Clock     clock.Clock
	Fleet     *Fleet
	Deps      *runtime.Deps
	Overrides *breaker.Overrides
	Buckets   *ratelimit.Buckets
	Audit     *audit.Log
	Keys      *chaos.KeySet

	mu      sync.Mutex
	notices []string
}

// NewEnv returns an environment on a new in-memory store.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	m := NewStore()
	e := NewEnvOn(t, m)
	e.Store = m
	return e
}

// NewEnvClock is [NewEnv] on the clock clk (a fake: a step that polls
// waits on it).
func NewEnvClock(t testing.TB, clk clock.Clock) *Env {
	t.Helper()
	m := NewStore()
	e := newEnvOn(t, m, clk)
	e.Store = m
	return e
}

// NewEnvOn is [NewEnv] on the store s.
func NewEnvOn(t testing.TB, s store.Store) *Env {
	t.Helper()
	return newEnvOn(t, s, clock.Real{})
}

func newEnvOn(t testing.TB, s store.Store, clk clock.Clock) *Env {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	e := &Env{T: t, Clock: clk, Table: s}
	e.Overrides = breaker.NewOverrides(s, e.Clock)
	var err error
	e.Buckets, err = ratelimit.NewBuckets(s, e.Clock, ratelimit.Limits{})
	must(err)
	e.Audit = audit.NewLog(s, e.Clock, "test")
	key, err := chaos.GenerateKey(nil)
	must(err)
	e.Keys, err = chaos.NewKeySet(key)
	must(err)
	minter, err := chaos.NewMinter(e.Keys, chaos.MinterOptions{Clock: e.Clock})
	must(err)
	verifier, err := chaos.NewVerifier(e.Keys, chaos.Options{Clock: e.Clock})
	must(err)
	e.Fleet = &Fleet{ov: e.Overrides, verifier: verifier, states: map[string]gauge.State{}}
	doer := HandlerDoer{e.Fleet}
	e.Deps = &runtime.Deps{
		Clock: e.Clock, ContextName: "test", StoreDescription: "memory store", Actor: "tester@test",
		Levers: Levers(s, e.Clock, e.Overrides, e.Buckets), KnownDependencies: []string{"core-api", "openai", "postgres", "screening-sim"},
		Audit: e.Audit, Minter: minter, HTTP: doer,
		Gauges: &runtime.MetricsGauges{Name: "prometheus http://fleet/metrics", New: func(context.Context) (metrics.GaugeSource, error) {
			return metrics.NewPrometheus([]string{"http://fleet/metrics"}, metrics.PrometheusOptions{Client: &http.Client{Transport: doer}, Clock: e.Clock})
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

// Parse parses src with the kinds of reg, failing the test on problems.
func Parse(t testing.TB, reg *drill.Registry, src string) *drill.Drill {
	t.Helper()
	d, probs := drill.Parse(reg, "test.yaml", []byte(src))
	if len(probs) > 0 {
		t.Fatalf("drill does not parse:\n%v", Problems(probs))
	}
	return d
}

// Problems lists probs one per line, as `drill validate` prints them.
func Problems(probs []drill.Problem) string {
	lines := make([]string, len(probs))
	for i, p := range probs {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// RunContext starts a run of d (run id "test-run") on e's services, with
// d's variables set.
func (e *Env) RunContext(d *drill.Drill) *runtime.RunContext {
	e.T.Helper()
	rc := runtime.NewRunContext(d, "test-run", e.Deps, func(n string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.notices = append(e.notices, n)
	})
	if err := rc.ResolveVars(); err != nil {
		e.T.Fatal(err)
	}
	return rc
}

// Notices are the notices runs of e's [Env.RunContext] gave the live log
// (runtime.RunContext.Notify), in order.
func (e *Env) Notices() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.notices...)
}

// StepResult is what one step did in [Env.Steps].
type StepResult struct {
	Outputs *runtime.Outputs
	Err     error
}

// UndoResult is what one rollback did in [Env.Steps].
type UndoResult struct {
	Subject, Detail string
	Err             error
}

// Steps runs d's steps in order on rc as the runner does, without its
// guards: a mutating step's rollback prepared before it acts, each step's
// outputs there for the next. It stops after the first step that fails
// (unless it continues on failure), then undoes every prepared rollback in
// reverse order, returning what each step and each undo did.
func (e *Env) Steps(ctx context.Context, rc *runtime.RunContext) (steps []StepResult, undone []UndoResult) {
	var rbs []runtime.Rollback
	for _, s := range rc.Drill.Steps {
		rc.SetCurrentStep(s.ID)
		var res StepResult
		if m, ok := s.Spec.(runtime.Mutating); ok {
			var rb runtime.Rollback
			if rb, res.Err = m.Prepare(ctx, rc); rb != nil {
				rbs = append(rbs, rb)
			}
		}
		if res.Err == nil {
			res.Outputs, res.Err = runtime.ActionOf(s).Run(ctx, rc)
		}
		if res.Outputs != nil {
			rc.SetOutputs(s.ID, res.Outputs)
		}
		steps = append(steps, res)
		if res.Err != nil && !s.ContinueOnFailure {
			break
		}
	}
	for i := len(rbs) - 1; i >= 0; i-- {
		detail, err := rbs[i].Undo(context.Background(), rc)
		undone = append(undone, UndoResult{Subject: rbs[i].Subject(), Detail: detail, Err: err})
	}
	return steps, undone
}

// Levers is the lever service of ov and b on s: a drill's, under the
// overrides' duration policy and the buckets' limits a test chose.
func Levers(s store.Store, clk clock.Clock, ov *breaker.Overrides, b *ratelimit.Buckets) *lever.Service {
	return lever.NewService(s, clk, builtin.Kinds(s, clk, builtin.Settings{Overrides: ov,
		Buckets: func() (*ratelimit.Buckets, error) { return b, nil }}))
}
