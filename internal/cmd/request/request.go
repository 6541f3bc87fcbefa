// Package request wires the `koshactl request` command group: change
// requests the table's policy asked approvals for, and break-glass reviews
// (docs/contracts/policy.md).
package request

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/request/ack"
	"github.com/kosha-platform/koshactl/internal/cmd/request/approve"
	"github.com/kosha-platform/koshactl/internal/cmd/request/closing"
	"github.com/kosha-platform/koshactl/internal/cmd/request/list"
	"github.com/kosha-platform/koshactl/internal/cmd/request/show"
)

// NewCmd returns the request command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "request",
		Short: "List, approve, deny and cancel change requests; acknowledge break-glass reviews",
		Long: "A lever change the table's policy needs approvals for becomes a change request (item request#<id>).\n" +
			"Another person approves it with koshactl request approve ID, which applies exactly the change requested.",
	}
	cmd.AddCommand(list.NewCmd(f), show.NewCmd(f), approve.NewCmd(f), closing.NewCmd(f, closing.Deny), closing.NewCmd(f, closing.Cancel), ack.NewCmd(f))
	return cmd
}
