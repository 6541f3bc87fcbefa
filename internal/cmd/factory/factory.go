// Package factory builds the full program's [cmdenv.Factory]: the wiring
// every koshactl program shares (internal/cmd/factory/base) and what only
// koshactl-full links: the local contexts' embedded store, --jq, and the
// mcp, dashboard and sandbox commands. koshactl-full, the in-process CLI
// harness and the docs generator use it; koshactl's front uses base alone
// and hands the rest to koshactl-full (docs/benchmarks/startup.md).
package factory

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	dashboardcmd "github.com/kosha-platform/koshactl/internal/cmd/dashboard"
	"github.com/kosha-platform/koshactl/internal/cmd/factory/base"
	mcpcmd "github.com/kosha-platform/koshactl/internal/cmd/mcp"
	"github.com/kosha-platform/koshactl/internal/cmd/mcptools"
	sandboxcmd "github.com/kosha-platform/koshactl/internal/cmd/sandbox"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/cmdutil/jq"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// An Option changes how [NewWith] wires the factory ([base.Option]).
type Option = base.Option

// WithoutPermissionWarning is [base.WithoutPermissionWarning].
func WithoutPermissionWarning() Option { return base.WithoutPermissionWarning() }

// Groups are the top-level commands only the full program links: they
// bring the MCP SDK (and encoding/gob), the dashboard's terminal UI and the
// reference data plane.
var Groups = []cmdenv.Group{
	{Names: []string{"dashboard"}, Build: func(f *cmdenv.Factory) *cobra.Command { return dashboardcmd.NewCmd(f, nil) }},
	{Names: []string{"sandbox"}, Build: func(f *cmdenv.Factory) *cobra.Command { return sandboxcmd.NewCmd(f, nil) }},
	{Names: []string{"mcp"}, Build: func(f *cmdenv.Factory) *cobra.Command { return mcpcmd.NewCmd(f, mcptools.Tools) }},
}

// New returns the full program's factory on the process's streams.
func New(opts ...Option) *cmdenv.Factory {
	return NewWith(iostreams.System(), clock.Real{}, opts...)
}

// NewWith returns the full production wiring on the given streams and
// clock: base's, the embedded store of local contexts, the groups above,
// and --jq (set for the process). In-process end-to-end tests use it with
// buffers and a fake clock, so they exercise the real context resolution.
func NewWith(ios *iostreams.IOStreams, clk clock.Clock, opts ...Option) *cmdenv.Factory {
	f := base.NewWith(ios, clk, append([]Option{base.WithLocalStore(openLocal(clk))}, opts...)...)
	f.Groups = Groups
	cmdutil.UseJQ(jq.Compile)
	return f
}

// openLocal opens a local context's embedded store, which collects expired
// items on the factory's clock as DynamoDB's TTL would (sqlite.WithSweep), so
// the file does not grow without bound.
func openLocal(clk clock.Clock) func(ctx context.Context, path string) (store.Store, error) {
	return func(ctx context.Context, path string) (store.Store, error) {
		return sqlite.Open(ctx, path, sqlite.WithSweep(clk))
	}
}
