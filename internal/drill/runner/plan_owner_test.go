package runner

import (
	"context"
	"testing"
)

// A step may be named drill: its rollback steps are still its own in the
// plan, not the drill's.
func TestPlanKeepsTheRollbacksOfAStepNamedDrill(t *testing.T) {
	e := newEnv(t)
	d := parse(t, "name: x\ntimeout: 1m\nsteps:\n  - id: drill\n    sleep: 1s\n    rollback:\n      - sleep: 1s\n  - id: other\n    sleep: 1s\n")
	p := NewPlan(context.Background(), d, e.Deps)
	if len(p.Steps[0].Rollbacks) != 1 || len(p.Rollbacks) != 0 {
		t.Fatalf("step drill's rollbacks %q, the drill's %q: want the one on the step", p.Steps[0].Rollbacks, p.Rollbacks)
	}
}
