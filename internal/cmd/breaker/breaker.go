// Package breaker wires the `koshactl breaker` command group.
package breaker

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/breaker/clear"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/forceopen"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/get"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/list"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/status"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
)

// NewCmd returns the breaker command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breaker",
		Short: "Force and clear fleet-wide circuit-breaker overrides",
		Long: "Fleet-wide forced_open overrides (items breaker#<dependency> in the context's store).\n" +
			"Every gateway instance reads them at most every 5 s; see docs/contracts/breaker-override.md.",
	}
	cmd.AddCommand(forceopen.NewCmd(f), clear.NewCmd(f), list.NewCmd(f), get.NewCmd(f))
	cmd.AddCommand(status.NewCmd(f, nil))
	return cmd
}
