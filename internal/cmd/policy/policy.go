// Package policy wires the `koshactl policy` command group: the table's
// shared change policy (docs/contracts/policy.md).
package policy

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/policy/get"
	"github.com/kosha-platform/koshactl/internal/cmd/policy/set"
)

// NewCmd returns the policy command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show and set the table's shared change policy (who may pull which lever, and with how many approvals)",
		Long: "The table's change policy is a Cedar policy set stored in the table (item policy#table), validated\n" +
			"against koshactl's schema. Every lever command asks it first; see docs/contracts/policy.md.\n" +
			"There is no policy delete: to leave four eyes, set docs/policies/allow-all.cedar (koshactl policy set --help).",
	}
	cmd.AddCommand(set.NewCmd(f), get.NewCmd(f))
	return cmd
}
