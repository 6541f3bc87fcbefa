// Command koshactl is the operator CLI and control plane of the Kosha
// resilience layer. All of its logic lives in internal/; main only wires the
// process (signals, streams) and exits with the code the command returns.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
)

func main() {
	startHeap()
	ctx, cancel := context.WithCancel(context.Background())
	f := factory.New()
	// SIGINT and SIGTERM cancel ctx from the moment a command's own code
	// runs. The handler is installed then, not here: it costs a locked OS
	// thread and two round trips to it, which a process that only parses its
	// arguments or prints its version does not need.
	f.OnRun = sync.OnceFunc(func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
		go func() {
			select {
			case <-signals:
				cancel()
			case <-ctx.Done():
			}
		}()
	})
	code := root.Run(ctx, f, os.Args[1:])
	cancel()
	os.Exit(code)
}

// startHeapPercent is the GOGC of koshactl's first garbage collection.
const startHeapPercent = 200

// startHeap lets the heap reach 8 MiB before the first garbage collection,
// then collects as GOGC=100 does. The runtime's first collection comes at
// 4 MiB, and package initialisation alone (the AWS SDK's schemas and endpoint
// tables, gojq, prometheus) allocates about 2.6 MiB: a command that then
// loaded its config and made a request paid for a collection that freed
// almost nothing, a fifth of a force-open on a busy machine
// (docs/benchmarks/startup.md). The Go compiler starts its heap the same way.
// A GOGC set in the environment is left as it is.
func startHeap() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(startHeapPercent)
	sentinel := new(struct{ _ *int })
	runtime.AddCleanup(sentinel, func(int) { debug.SetGCPercent(100) }, 0)
}
