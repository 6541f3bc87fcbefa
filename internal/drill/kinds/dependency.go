package kinds

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// A dependency named by a step (the override lever) or a condition
// (breaker): its literal checked when the file is parsed, its templated
// value when the run expands it.

// checkDependency validates a dependency name at run time (after
// templating): its shape, and that the context knows it.
func checkDependency(rc *runtime.RunContext, dep string, allowUnknown bool) error {
	known := rc.Deps.KnownDependencies
	if allowUnknown || len(known) == 0 {
		return breaker.ValidateDependency(dep)
	}
	var unknown *breaker.UnknownDependencyError
	if err := breaker.CheckKnownDependency(dep, known); !errors.As(err, &unknown) {
		return err
	}
	return fmt.Errorf("unknown dependency %q: context %q knows %s%s (set allow_unknown: true to use it anyway)",
		dep, rc.Deps.ContextName, strings.Join(known, ", "), unknown.DidYouMean())
}

// decodeDependency reads the dependency field, checking a literal name.
func decodeDependency(m *drill.Map) (drill.Template, bool) {
	t, ok := m.Template("dependency", true)
	if !ok {
		return t, false
	}
	if s, static := t.Static(); static {
		if err := breaker.ValidateDependency(s); err != nil {
			m.Errorf("dependency", "%v", err)
			return t, false
		}
	}
	return t, true
}
