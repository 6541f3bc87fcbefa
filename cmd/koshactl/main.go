// Command koshactl is the operator CLI and control plane of the Kosha
// resilience layer. All of its logic lives in internal/; main only wires the
// process and exits with the code the command returns.
//
// It is the front of two programs: it links the commands an operator runs
// against DynamoDB, and hands every other invocation (the MCP server, the
// dashboard, the sandbox, --jq, a local context, help) to koshactl-full
// beside it before doing anything, so a short command pays no start-up for
// what it does not use (docs/benchmarks/startup.md).
package main

import (
	"os"

	"github.com/kosha-platform/koshactl/internal/build"
	"github.com/kosha-platform/koshactl/internal/cmd/factory/base"
	"github.com/kosha-platform/koshactl/internal/cmd/handoff"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	// The first garbage collection at 8 MiB, set before the packages that
	// allocate most run their init (see its doc).
	_ "github.com/kosha-platform/koshactl/internal/startheap"
)

func main() {
	f := base.New()
	f.HandOff = func(args []string) error {
		info := build.Get()
		env := []string{handoff.EnvFrontVersion + "=" + info.Version + " " + info.Commit}
		if file, err := f.Config(); err == nil && file.PermissionWarning() != "" {
			env = append(env, handoff.EnvFrontWarned+"=1") // said once, here
		}
		return handoff.Run(args, env)
	}
	os.Exit(root.Main(f, os.Args[1:]))
}
