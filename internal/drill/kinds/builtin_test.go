package kinds

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// TestBuiltinTable checks the built-in table as RegisterStep and
// RegisterCondition used to check it at run time (Registry.Check).
func TestBuiltinTable(t *testing.T) {
	reg := Builtin()
	if err := reg.Check(); err != nil {
		t.Error(err)
	}
	for _, k := range reg.Steps {
		want := map[string]bool{"breaker.force-open": true, "breaker.clear": true, "ratelimit.drain": true, "ratelimit.reset": true,
			"ratelimit.set": true, "chaos.sign": true}[k.Name()]
		if drill.Mutates(k) != want {
			t.Errorf("Mutates(%s) = %v, want %v", k.Name(), !want, want)
		}
	}
}
