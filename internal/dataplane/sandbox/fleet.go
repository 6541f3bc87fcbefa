package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
	"github.com/kosha-platform/koshactl/internal/freeze"
)

// HeaderInstance pins a request to one instance ("gw-3", or "3"); without
// it requests are spread round-robin, like a load balancer in front of
// Lambda. Responses carry it too, naming the instance that answered.
const HeaderInstance = "X-Kosha-Instance"

// InstanceName returns the name of the i-th instance (from 1): gw-i.
func InstanceName(i int) string { return "gw-" + strconv.Itoa(i) }

// ErrUnknownInstance is returned by [Fleet.Route] for a pin naming no
// instance.
var ErrUnknownInstance = errors.New("unknown instance")

// Instance is one gateway instance (one Lambda execution environment): its
// own breakers, retry budgets, bulkheads and in-flight counter, built from
// the reference data plane. Only the breaker overrides and the freeze are
// shared, through the store, each instance reading them into its own cache.
type Instance struct {
	name string
	reg  *resilience.Registry

	coreReads, coreWrites, screening, openai, postgres *resilience.Policy
	tools                                              map[string]resilience.Tool
	watchers                                           []*circuit.ForceWatcher
	// control reads the overrides with the freeze, and holds the freeze
	// reading the chaos gate acts on; nil for an instance that ignores the
	// store (the ignore-overrides test knob), which obeys no freeze either.
	control *controlReader
	served  atomic.Uint64
}

// policies names the operations an instance uses.
var policies = []struct{ dep, op string }{
	{CoreAPI, resilience.Reads}, {CoreAPI, resilience.Writes}, {ScreeningSim, ""}, {OpenAI, ""}, {Postgres, ""},
}

// toolDependencies are what the load shedder checks at tool start: a tool
// whose only dependency's breaker is open fails fast with
// dependency_unavailable (LLD §7). screen_entity lists none on purpose: the
// degradation matrix defers it instead of failing it (docs/sandbox.md).
var toolDependencies = map[string][]string{
	ToolSearchKnowledgeBase: {CoreAPI},
	ToolScreenEntity:        nil,
	ToolRaiseDispute:        {CoreAPI},
	ToolFlagTransaction:     {CoreAPI},
	ToolGetServiceHealth:    nil,
}

func newInstance(name string, cfg Config, opts resilience.Options) (*Instance, error) {
	reg, err := resilience.NewRegistry(cfg.Resilience, opts)
	if err != nil {
		return nil, fmt.Errorf("build instance %s: %w", name, err)
	}
	in := &Instance{name: name, reg: reg, tools: map[string]resilience.Tool{}}
	ps := make([]*resilience.Policy, len(policies))
	for i, p := range policies {
		pol, ok := reg.Policy(p.dep, p.op)
		if !ok {
			return nil, fmt.Errorf("build instance %s: no policy for %s %s: %w", name, p.dep, p.op, ErrInvalidConfig)
		}
		ps[i] = pol
	}
	in.coreReads, in.coreWrites, in.screening, in.openai, in.postgres = ps[0], ps[1], ps[2], ps[3], ps[4]
	for tool, deps := range toolDependencies {
		ts := cfg.Tools[tool]
		t, err := reg.Tool(tool, ts.Budget, ts.MinBudget, deps...)
		if err != nil {
			return nil, fmt.Errorf("build instance %s: %w", name, err)
		}
		in.tools[tool] = t
	}
	for _, d := range reg.Dependencies() {
		if d.Force != nil {
			in.watchers = append(in.watchers, d.Force)
		}
	}
	return in, nil
}

// Name returns the instance's name (gw-N).
func (in *Instance) Name() string { return in.name }

// Dependency returns the instance's layers for a dependency.
func (in *Instance) Dependency(name string) (*resilience.Dependency, bool) {
	return in.reg.Dependency(name)
}

// BreakerState returns the state of the instance's breaker on dependency
// (closed for a dependency without a breaker). Like the gauge, it turns an
// open breaker whose open duration has elapsed half-open.
func (in *Instance) BreakerState(dependency string) circuit.State {
	d, ok := in.reg.Dependency(dependency)
	if !ok || d.Breaker == nil {
		return circuit.Closed
	}
	return d.Breaker.State()
}

// Shedder returns the instance's load shedder (its in-flight counter).
func (in *Instance) Shedder() *resilience.LoadShedder { return in.reg.Shedder() }

// Served counts the tool calls the instance ran.
func (in *Instance) Served() uint64 { return in.served.Load() }

// freezeReading returns the freeze reading the chaos gate acts on for a
// header targeting target. The override reads keep it fresh; one older
// than the cache period (an instance idle since) is refreshed first by
// syncing the watcher of the target's breaker (or, for a target without
// one, the instance's first): the read the call makes anyway, the freeze in
// its batch, so the header costs no round trip of its own. An instance that
// ignores the store has no reading (its gate skips the check).
func (in *Instance) freezeReading(ctx context.Context, target string, now time.Time) freeze.Reading {
	if in.control == nil {
		return freeze.Reading{}
	}
	if !in.control.fresh(now) && len(in.watchers) > 0 {
		w := in.watchers[0]
		if d, ok := in.reg.Dependency(target); ok && d.Force != nil {
			w = d.Force
		}
		w.Sync(ctx)
	}
	return in.control.snapshot()
}

// ChaosFrozen reports whether the instance refuses every chaos header at
// now because of the freeze (the chaos_frozen gauge): the fleet is frozen,
// or the instance has not read the freeze item recently enough to know.
// An instance that ignores the store reports false.
func (in *Instance) ChaosFrozen(now time.Time) bool {
	return in.control != nil && in.control.refusesAll(now)
}

// SyncOverrides brings every breaker in line with the store's overrides
// (reading them if the cache period has passed) and applies lazy transitions
// (open → half-open), as a request would. The fleet calls it every
// OverridePoll, and when an override cache goes stale, so idle instances
// move too.
func (in *Instance) SyncOverrides(ctx context.Context) {
	for _, w := range in.watchers {
		w.Sync(ctx)
		w.Breaker().State()
	}
}

// overrideReadErrors sums the instance's failed override reads.
func (in *Instance) overrideReadErrors(dependency string) uint64 {
	d, ok := in.reg.Dependency(dependency)
	if !ok || d.Force == nil {
		return 0
	}
	return d.Force.ReadErrors()
}

// retryHint is how long a client should wait before retrying a call the
// dependency's breaker refused: the open breaker's remaining time, or for a
// forced breaker the override cache period (the soonest a clear can reach
// this instance).
func (in *Instance) retryHint(dependency string, refresh time.Duration) time.Duration {
	d, ok := in.reg.Dependency(dependency)
	if !ok || d.Breaker == nil {
		return 0
	}
	if rem := d.Breaker.RemainingOpen(); rem > 0 {
		return rem
	}
	if d.Breaker.State() == circuit.ForcedOpen {
		return refresh
	}
	return 0
}

// chaosFrozen reports whether any instance that obeys the store refuses
// every chaos header at now: the simulators' knobs, which stand behind the
// whole fleet, inject nothing then.
func (f *Fleet) chaosFrozen(now time.Time) bool {
	for _, in := range f.instances {
		if in.ChaosFrozen(now) {
			return true
		}
	}
	return false
}

// Fleet is the sandbox's gateway instances and the router in front of them.
type Fleet struct {
	instances []*Instance
	byName    map[string]*Instance
	next      atomic.Uint64
}

// Instances returns the instances, gw-1 first.
func (f *Fleet) Instances() []*Instance { return f.instances }

// Instance returns the named instance.
func (f *Fleet) Instance(name string) (*Instance, bool) {
	in, ok := f.byName[name]
	return in, ok
}

// Route picks the instance for a request: the one pin names ("gw-3" or
// "3"), or the next one round-robin when pin is empty.
func (f *Fleet) Route(pin string) (*Instance, error) {
	if pin == "" {
		n := f.next.Add(1) - 1
		return f.instances[n%uint64(len(f.instances))], nil
	}
	pin = strings.TrimSpace(pin)
	if in, ok := f.byName[pin]; ok {
		return in, nil
	}
	if i, err := strconv.Atoi(pin); err == nil && i >= 1 && i <= len(f.instances) {
		return f.instances[i-1], nil
	}
	return nil, fmt.Errorf("%w %q: this fleet has %s..%s", ErrUnknownInstance, pin, InstanceName(1), InstanceName(len(f.instances)))
}

// newFleet builds cfg.Instances instances. onChange hears every breaker
// transition, onFreeze every change of an instance's chaos_frozen value.
func newFleet(cfg Config, deps Deps, onChange func(instance string, t circuit.Transition),
	onFreeze func(instance string, frozen bool, at time.Time)) (*Fleet, error) {
	f := &Fleet{byName: map[string]*Instance{}}
	for i := 1; i <= cfg.Instances; i++ {
		name := InstanceName(i)
		opts := resilience.Options{
			Clock:  deps.Clock,
			Logger: deps.Logger.With(slog.String("instance", name)),
		}
		var control *controlReader
		if slices.Contains(cfg.IgnoreOverrides, i) {
			// The test knob: this instance never sees an override, nor the
			// freeze (a data plane that does not obey the store).
			opts.Force = ignoreOverrides
			opts.Logger.Warn("this instance ignores breaker overrides and the freeze (the ignore-overrides test knob)",
				slog.String("event", "sandbox_ignore_overrides"))
		} else {
			control = newControlReader(deps.Store, deps.Clock, deps.Logger, cfg.OverrideRefresh, name, onFreeze)
			opts.Force = control
		}
		if onChange != nil {
			opts.OnStateChange = func(t circuit.Transition) { onChange(name, t) }
		}
		in, err := newInstance(name, cfg, opts)
		if err != nil {
			return nil, err
		}
		in.control = control
		f.instances = append(f.instances, in)
		f.byName[name] = in
	}
	return f, nil
}

// ignoreOverrides is the override source of an instance that ignores the
// store: every dependency reads as not forced.
var ignoreOverrides = circuit.ForceSourceFunc(func(context.Context, string) (breaker.Force, error) {
	return breaker.Force{}, nil
})

// pollOverrides runs every instance's [Instance.pollOverrides] on its own
// goroutine with a random phase (as independent Lambdas would), on clk,
// until ctx ends.
func (f *Fleet) pollOverrides(ctx context.Context, clk clock.Clock, poll time.Duration, wg *sync.WaitGroup) {
	for _, in := range f.instances {
		phase := time.Duration(rand.Int64N(int64(poll) + 1)) //nolint:gosec // G404: a poll phase, not a secret
		wg.Go(func() { in.pollOverrides(ctx, clk, poll, phase) })
	}
}

// pollOverrides syncs the instance's overrides, first after phase, then
// every poll (measured on clk) for the lazy transitions, and at the instant
// a watcher's cache goes stale or its override expires
// ([circuit.ForceWatcher.NextSync]), until ctx ends. Waking on the poll's
// grid alone read a change up to a poll period after the cache went stale.
func (in *Instance) pollOverrides(ctx context.Context, clk clock.Clock, poll, phase time.Duration) {
	wake := phase
	for {
		select {
		case <-ctx.Done():
			return
		case <-clock.After(clk, wake):
		}
		in.SyncOverrides(ctx)
		wake = poll
		now := clk.Now()
		for _, w := range in.watchers {
			if at := w.NextSync(); !at.IsZero() {
				// A watcher still stale (a request is reading it) is
				// looked at again a millisecond later, not in a spin.
				wake = min(wake, max(at.Sub(now), time.Millisecond))
			}
		}
	}
}
