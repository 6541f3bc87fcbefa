package kinds

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
)

// waitForKind is the wait-for step: poll a condition until it holds, or
// fail when timeout passes.
//
//	wait-for:
//	  breaker: {dependency: openai, state: forced_open}   # any condition kind
//	  timeout: 30s        # required
//	  interval: 500ms     # default: the drill's poll_interval
//	  on_error: stop      # default; continue: poll on through errors
//
// Stop conditions are evaluated while it waits. The condition is a guard:
// when it stays unevaluable past the drill's guard_grace, the wait ends
// with "guard lost" and the run stops and rolls back (on_error: continue
// polls on until the timeout). Outputs: elapsed_ms, polls, detail (the
// last observation).
var waitForKind = stepKind{name: "wait-for",
	summary: "poll a condition (breaker state, HTTP response, bucket, shell) until it holds or the timeout passes",
	outputs: []string{"elapsed_ms", "polls", "detail"}, decode: decodeWaitFor}

// waitGrace is added to a wait's timeout for the step's own default
// timeout, so the wait reports its own failure rather than the step's.
const waitGrace = 5 * time.Second

func decodeWaitFor(d *drill.Decoder, n *yaml.Node) drill.Spec {
	m := d.Map(n, "wait-for")
	if m == nil {
		return nil
	}
	a := &waitFor{interval: d.PollInterval()}
	ok := true
	if t, present := m.Duration("timeout", true); present {
		a.timeout = t
		switch {
		case d.StepTimeout() > 0 && t > d.StepTimeout():
			m.Errorf("timeout", "%s is longer than the step's timeout %s", t, d.StepTimeout())
			ok = false
		case d.DrillTimeout() > 0 && t > d.DrillTimeout():
			m.Errorf("timeout", "%s is longer than the drill's timeout %s", t, d.DrillTimeout())
			ok = false
		}
	} else {
		ok = false
	}
	if t, present := m.Duration("interval", false); present {
		a.interval = t
		switch {
		case t < drill.MinPollInterval:
			m.Errorf("interval", "%s is shorter than the %s minimum", t, drill.MinPollInterval)
			ok = false
		case a.timeout > 0 && t >= a.timeout:
			m.Errorf("interval", "%s is not shorter than the timeout %s", t, a.timeout)
			ok = false
		}
	}
	a.onError = d.OnError(m)
	c := d.NestedCondition(m, "wait-for", "timeout", "interval", "on_error")
	if c == nil || !ok {
		return nil
	}
	a.cond = c.(runtime.Condition)
	return a
}

type waitFor struct {
	cond     runtime.Condition
	timeout  time.Duration
	interval time.Duration
	onError  string
}

var _ runtime.DefaultTimeouter = (*waitFor)(nil)

func (a *waitFor) DefaultTimeout() time.Duration { return a.timeout + waitGrace }

func (a *waitFor) Describe(rc *runtime.RunContext) string {
	s := fmt.Sprintf("wait up to %s until %s", a.timeout, a.cond.Describe(rc))
	if a.onError == drill.OnErrorContinue {
		s += " (on_error: continue: polls on through evaluation errors)"
	}
	return s
}

func (a *waitFor) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	spec := runtime.PollSpec{Within: a.timeout, Interval: a.interval, OnChange: func(detail string) {
		rc.Notify("waiting: %s", detail)
	}}
	if a.onError != drill.OnErrorContinue {
		spec.Guard = &runtime.PollGuard{Role: drill.RoleWaitFor, Name: rc.CurrentStep(), Grace: rc.Drill.GuardGrace}
	}
	res, err := runtime.Poll(ctx, rc, a.cond, spec)
	out := runtime.NewOutputs().Set("elapsed_ms", strconv.FormatInt(res.Elapsed.Milliseconds(), 10)).
		Set("polls", strconv.Itoa(res.Polls)).Set("detail", rc.Redact(res.Obs.Detail))
	if err != nil {
		return out, err
	}
	out.Detail = fmt.Sprintf("%s after %s (%s)", rc.Redact(res.Obs.Detail), human.Duration(drill.DisplayPrecision(res.Elapsed)), human.Count(int64(res.Polls), "check"))
	return out, nil
}
