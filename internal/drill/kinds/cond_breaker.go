package kinds

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
)

// Sources of the breaker condition.
const (
	// SourceGauges reads the fleet's breaker_state gauges (the context's
	// metrics source, or the drill's metrics_url).
	SourceGauges = "gauges"
	// SourceStore reads the override item in the context's store.
	SourceStore = "store"
)

// Store-source states of the breaker condition.
const (
	// StateNotForced: no active override.
	StateNotForced = "not_forced"
)

var gaugeStates = []string{"closed", "half_open", "open", "forced_open"}

// breakerConditionKind is the breaker condition: a dependency's breaker is
// in one of the given states.
//
//	breaker:
//	  dependency: openai
//	  state: open                 # or a list: [open, half_open]
//	  source: gauges              # gauges (default) or store
//	  instance: gw-1              # gauges: only this instance (default: every one)
//	  instances: all              # gauges: all (default) or any reporting instance
//	  min_instances: 1            # gauges: at least this many must report (default 1)
//
// With source gauges the states are closed, half_open, open and
// forced_open; with source store they are forced_open (an active override)
// and not_forced.
var breakerConditionKind = conditionKind{name: "breaker",
	summary: "holds when a dependency's breaker is in a state, per the fleet's gauges or the store's override",
	decode:  decodeBreakerCondition}

func decodeBreakerCondition(d *drill.Decoder, n *yaml.Node) drill.Spec {
	m := d.Fields(n, "breaker", "dependency", "state", "source", "instance", "instances", "min_instances")
	if m == nil {
		return nil
	}
	c := &breakerCondition{source: SourceGauges, all: true, minInstances: 1}
	var ok bool
	c.dependency, ok = decodeDependency(m)
	if s, present := m.String("source", false); present {
		if s != SourceGauges && s != SourceStore {
			m.Errorf("source", "%q: use gauges (the fleet's breaker_state) or store (the override item)", s)
			ok = false
		}
		c.source = s
	}
	allowed := gaugeStates
	if c.source == SourceStore {
		allowed = []string{breaker.OverrideStateForcedOpen, StateNotForced}
	}
	if sn := m.Require("state"); sn != nil {
		items := drill.Items(sn)
		for _, it := range items {
			s, sok := d.String(it, "breaker: state")
			if !sok {
				ok = false
				continue
			}
			if !slices.Contains(allowed, s) {
				d.Errorf(it, "breaker: state: %q is not a state of source %s: use %s%s", s, c.source, strings.Join(allowed, ", "), drill.DidYouMean(s, allowed))
				ok = false
				continue
			}
			c.states = append(c.states, s)
		}
		if len(items) == 0 {
			d.Errorf(sn, "breaker: state: name at least one state")
			ok = false
		}
	} else {
		ok = false
	}
	// gauges says whether key, present, may be used: only with source gauges.
	gauges := func(key string) bool {
		if c.source == SourceStore {
			m.Errorf(key, "applies to source gauges only")
			ok = false
		}
		return c.source != SourceStore
	}
	if m.Has("instance") {
		gauges("instance")
		var iok bool
		c.instance, iok = m.Template("instance", false)
		ok = ok && iok
	}
	if s, present := m.String("instances", false); present && gauges("instances") {
		if s != "all" && s != "any" {
			m.Errorf("instances", "%q: use all or any", s)
			ok = false
		}
		c.all = s != "any"
	}
	if v, present := m.Int("min_instances", false); present && gauges("min_instances") {
		if v < 0 {
			m.Errorf("min_instances", "%d is negative", v)
			ok = false
		}
		c.minInstances = v
	}
	if !ok {
		return nil
	}
	return c
}

type breakerCondition struct {
	dependency   drill.Template
	instance     drill.Template
	states       []string
	source       string
	all          bool
	minInstances int
}

func (c *breakerCondition) Describe(rc *runtime.RunContext) string {
	who := "every reporting instance of"
	if !c.all {
		who = "some instance of"
	}
	if c.source == SourceStore {
		return fmt.Sprintf("the override of %s is %s", rc.Describe(c.dependency), strings.Join(c.states, " or "))
	}
	if !c.instance.IsZero() {
		who = "instance " + rc.Describe(c.instance) + " of"
	}
	return fmt.Sprintf("%s %s is %s (gauges)", who, rc.Describe(c.dependency), strings.Join(c.states, " or "))
}

func (c *breakerCondition) Check(ctx context.Context, rc *runtime.RunContext) (runtime.Observation, error) {
	dep, err := rc.Expand(c.dependency)
	if err != nil {
		return runtime.Observation{}, err
	}
	// A templated name is checked like a literal one: it becomes part of
	// a store key and of a metrics query (a CloudWatch SEARCH).
	if err := breaker.ValidateDependency(dep); err != nil {
		return runtime.Observation{}, err
	}
	if c.source == SourceStore {
		return c.checkStore(ctx, rc, dep)
	}
	if err := runtime.NeedService(rc.Deps.Gauges != nil, "gauge source (set metrics_url, or configure the context's metrics)"); err != nil {
		return runtime.Observation{}, err
	}
	r, err := rc.Deps.Gauges.Read(ctx, dep)
	if err != nil {
		return runtime.Observation{}, err
	}
	if !c.instance.IsZero() {
		name, err := rc.Expand(c.instance)
		if err != nil {
			return runtime.Observation{}, err
		}
		r.Instances = slices.DeleteFunc(slices.Clone(r.Instances), func(in runtime.InstanceGauge) bool { return in.Instance != name })
		if len(r.Instances) == 0 {
			return runtime.Observation{Detail: fmt.Sprintf("%s: instance %s reports no breaker_state", dep, name)}, nil
		}
	}
	counts := map[string]int{}
	match := 0
	for _, in := range r.Instances {
		s := in.State.String()
		counts[s]++
		if slices.Contains(c.states, s) {
			match++
		}
	}
	n := len(r.Instances)
	detail := fmt.Sprintf("%s: no instance reports a breaker_state", dep)
	if n > 0 {
		var parts []string
		for _, s := range gaugeStates {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
			}
		}
		detail = fmt.Sprintf("%s: %s: %s", dep, human.Count(int64(n), "instance"), strings.Join(parts, ", "))
	}
	holds := n >= c.minInstances && ((c.all && match == n && n > 0) || (!c.all && match > 0))
	if n < c.minInstances && n > 0 {
		detail += fmt.Sprintf(" (want at least %d reporting)", c.minInstances)
	}
	return runtime.Observation{Holds: holds, Detail: detail}, nil
}

func (c *breakerCondition) checkStore(ctx context.Context, rc *runtime.RunContext, dep string) (runtime.Observation, error) {
	o, err := readOverride(ctx, rc, dep)
	if err != nil {
		return runtime.Observation{}, err
	}
	state, detail := StateNotForced, dep+": no override"
	switch {
	case o == nil:
	case o.ActiveAt(rc.Now()):
		state = breaker.OverrideStateForcedOpen
		detail = fmt.Sprintf("%s: forced open by %s (%s)", dep, o.Actor, expiryText(o.ExpiresAt))
	case o.State != breaker.OverrideStateForcedOpen:
		detail = dep + ": override item not in force"
	default:
		detail = fmt.Sprintf("%s: override expired at %s", dep, o.ExpiresAt.UTC().Format("15:04:05Z"))
	}
	if o != nil && o.Malformed() {
		detail += "; " + o.MalformedSummary(rc.Now())
	}
	return runtime.Observation{Holds: slices.Contains(c.states, state), Detail: detail}, nil
}
