// Package audit implements `koshactl audit`: the audit log of
// control-plane changes, listed (audit list) or read for the tools forced
// overrides degraded (audit impact).
package audit

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/audit/impact"
	"github.com/kosha-platform/koshactl/internal/cmd/audit/list"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
)

// NewCmd returns the audit command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read the audit log of control-plane changes"}
	cmd.AddCommand(list.NewCmd(f), impact.NewCmd(f))
	return cmd
}
