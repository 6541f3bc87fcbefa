package startheap

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// gogc reads the runtime's current GOGC without changing it.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// start raises GOGC until the first collection, then GOGC is 100 again;
// a GOGC from the environment is left alone. Not parallel: GOGC is the
// process's.
func TestStartHeap(t *testing.T) {
	t.Run("without GOGC", func(t *testing.T) {
		if _, set := os.LookupEnv("GOGC"); set {
			t.Setenv("GOGC", "")    // restored after the test
			_ = os.Unsetenv("GOGC") // start asks whether it is set at all
		}
		start()
		if got := gogc(); got != Percent {
			t.Fatalf("GOGC = %d after startHeap, want %d", got, Percent)
		}
		// The cleanup runs on its own goroutine after a cycle found the
		// sentinel dead: collect until it has (each cycle is the wait).
		wait.Until(t, "GOGC back at 100 after the first collections", func() bool {
			if gogc() == 100 {
				return true
			}
			runtime.GC()
			return gogc() == 100
		})
	})
	t.Run("with GOGC", func(t *testing.T) {
		t.Setenv("GOGC", "50")
		before := gogc()
		start()
		if got := gogc(); got != before {
			t.Errorf("GOGC = %d after startHeap with GOGC=50 set, want it left at %d", got, before)
		}
	})
}
