package kinds

import (
	"context"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// sleepKind is the sleep step: wait a fixed time (interruptible: a signal,
// the drill's timeout or a stop condition ends it at once).
//
//	sleep: 5s
//	sleep: {for: 5s}
var sleepKind = stepKind{name: "sleep", summary: "wait a fixed time; ends at once on interrupt, timeout or stop condition",
	decode: decodeSleep}

func decodeSleep(d *drill.Decoder, n *yaml.Node) drill.Spec {
	n = d.Resolve(n)
	if n == nil {
		return nil
	}
	var dur time.Duration
	var ok bool
	if n.Kind == yaml.MappingNode {
		m := d.Fields(n, "sleep", "for")
		if m == nil {
			return nil
		}
		dur, ok = m.Duration("for", true)
	} else {
		dur, ok = d.Duration(n, "sleep")
	}
	if !ok {
		return nil
	}
	switch {
	case d.StepTimeout() > 0 && dur >= d.StepTimeout():
		d.Errorf(n, "sleep: %s does not fit in the step's timeout %s", dur, d.StepTimeout())
		return nil
	case d.DrillTimeout() > 0 && dur >= d.DrillTimeout():
		d.Errorf(n, "sleep: %s does not fit in the drill's timeout %s", dur, d.DrillTimeout())
		return nil
	}
	return &sleepStep{dur: dur}
}

type sleepStep struct{ dur time.Duration }

var _ runtime.DefaultTimeouter = (*sleepStep)(nil)

func (a *sleepStep) DefaultTimeout() time.Duration { return a.dur + waitGrace }

func (a *sleepStep) Describe(*runtime.RunContext) string { return fmt.Sprintf("sleep %s", a.dur) }

func (a *sleepStep) Run(ctx context.Context, _ *runtime.RunContext) (*runtime.Outputs, error) {
	t := time.NewTimer(a.dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return runtime.NewOutputs(), nil
	}
}
