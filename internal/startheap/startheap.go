package startheap

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Percent is the GOGC of the process's first garbage collection.
const Percent = 200

func init() { start() }

// start raises GOGC to Percent until the first collection, then collects as
// GOGC=100 does. A GOGC set in the environment is left as it is.
func start() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(Percent)
	sentinel := new(struct{ _ *int })
	runtime.AddCleanup(sentinel, func(int) { debug.SetGCPercent(100) }, 0)
}
