// Command koshactl is the operator CLI and control plane of the Kosha
// resilience layer. All of its logic lives in internal/; main only wires the
// process (signals, streams) and exits with the code the command returns.
package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	// The first garbage collection at 8 MiB, set before the packages that
	// allocate most run their init (see its doc).
	_ "github.com/kosha-platform/koshactl/internal/startheap"
)

func main() {
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
