// Package freeze wires the `koshactl freeze` command group: the command
// itself freezes the fleet (internal/cmd/freeze/set); status and lift are
// its subcommands.
package freeze

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/lift"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/set"
	"github.com/kosha-platform/koshactl/internal/cmd/freeze/status"
)

// NewCmd returns the freeze command with its subcommands.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := set.NewCmd(f)
	cmd.AddCommand(status.NewCmd(f), lift.NewCmd(f))
	return cmd
}
