package kinds

import (
	"testing"
)

// TestBuiltinTable checks the built-in table as RegisterStep and
// RegisterCondition used to check it at run time (Registry.Check).
func TestBuiltinTable(t *testing.T) {
	reg := Builtin()
	if err := reg.Check(); err != nil {
		t.Error(err)
	}
	if !reg.Mutates(BreakerForceOpenKind{}) || reg.Mutates(SleepKind{}) {
		t.Error("Mutates: breaker.force-open mutates and sleep does not")
	}
}
