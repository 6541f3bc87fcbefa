package drill

import (
	"slices"
	"testing"
)

// TestBuiltinTable checks what RegisterStep and RegisterCondition used to
// check at run time: every kind name is set, unique and not a common field,
// and every name in Mutating is a step kind.
func TestBuiltinTable(t *testing.T) {
	reg := Builtin()
	seen := map[string]bool{}
	for _, k := range reg.Steps {
		n := k.Name()
		if n == "" || slices.Contains(stepFields, n) || seen[n] {
			t.Errorf("step kind %q: empty, reserved or listed twice", n)
		}
		seen[n] = true
	}
	for _, n := range reg.Mutating {
		if !seen[n] {
			t.Errorf("Mutating lists %q, which is not a step kind", n)
		}
	}
	seen = map[string]bool{}
	for _, k := range reg.Conditions {
		n := k.Name()
		if n == "" || slices.Contains(checkFields, n) || seen[n] {
			t.Errorf("condition kind %q: empty, reserved or listed twice", n)
		}
		seen[n] = true
	}
	if !reg.Mutates(BreakerForceOpenKind{}) || reg.Mutates(SleepKind{}) {
		t.Error("Mutates: breaker.force-open mutates and sleep does not")
	}
}
