package runtime

import (
	"maps"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// Environ is the environment a command of the run gets: the base
// environment (Deps.Environ), the drill's identity (DRILL_NAME,
// DRILL_RUN_ID, DRILL_CONTEXT, DRILL_DEADLINE), every variable
// (DRILL_VAR_NAME) and every output of earlier steps
// (DRILL_STEP_ID_OUTPUT). A variable or output holding NUL, which the
// environment cannot carry, is left out with a notice.
func (rc *RunContext) Environ() []string {
	env := append([]string(nil), rc.Deps.Environ...)
	env = append(env, "DRILL_NAME="+rc.Drill.Name, "DRILL_RUN_ID="+rc.RunID, "DRILL_CONTEXT="+rc.Deps.ContextName,
		"DRILL_DEADLINE="+rc.Deadline().UTC().Format(time.RFC3339))
	add := func(name, value string) {
		if drill.EnvCarries(value) {
			env = append(env, name+"="+value)
		} else {
			rc.Notify("%s is not set for the command: its value holds a NUL byte, which an environment variable cannot carry", name)
		}
	}
	rc.mu.Lock()
	vars := make([][2]string, 0, len(rc.vars))
	for _, name := range slices.Sorted(maps.Keys(rc.vars)) {
		vars = append(vars, [2]string{drill.EnvName("DRILL_VAR", name), rc.vars[name]})
	}
	rc.mu.Unlock()
	for _, v := range vars {
		add(v[0], v[1])
	}
	outs := rc.StepOutputs()
	for _, id := range slices.Sorted(maps.Keys(outs)) {
		o := outs[id]
		for _, name := range o.names {
			if v, ok := o.values[name]; ok {
				add(drill.EnvName("DRILL_STEP", id, name), v)
			}
		}
	}
	return env
}
