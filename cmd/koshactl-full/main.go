// Command koshactl-full is the whole of koshactl: every command, local
// contexts' embedded store and --jq. koshactl, the front, hands it what the
// front does not link; run on its own it does everything koshactl does
// (docs/benchmarks/startup.md).
package main

import (
	"fmt"
	"os"

	"github.com/kosha-platform/koshactl/internal/build"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/handoff"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	// The first garbage collection at 8 MiB, set before the packages that
	// allocate most run their init (see its doc).
	_ "github.com/kosha-platform/koshactl/internal/startheap"
)

func main() {
	// A front hands its run over with its version: the two must be one
	// build, or a command would run by another koshactl's rules.
	front, handedOff := os.LookupEnv(handoff.EnvFrontVersion)
	warned := os.Getenv(handoff.EnvFrontWarned) == "1"
	_ = os.Unsetenv(handoff.EnvFrontVersion)
	_ = os.Unsetenv(handoff.EnvFrontWarned)
	if info := build.Get(); handedOff && front != info.Version+" "+info.Commit {
		fmt.Fprintf(os.Stderr, "error: koshactl is %s and %s beside it is %s %s: install both programs from one release\n",
			front, handoff.Full, info.Version, info.Commit)
		os.Exit(exitcode.Unavailable)
	}
	var opts []factory.Option
	if warned {
		opts = append(opts, factory.WithoutPermissionWarning())
	}
	os.Exit(root.Main(factory.New(opts...), os.Args[1:]))
}
