// Command koshactl is the operator CLI and control plane of the Kosha
// resilience layer. All of its logic lives in internal/; main only wires the
// process (signals, streams) and exits with the code the command returns.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := root.Run(ctx, factory.New(), os.Args[1:])
	stop()
	os.Exit(code)
}
