// Package iam implements `koshactl iam`: the least-privilege IAM policies
// of koshactl's roles (iam policy). Its tests hold each role's policy to
// the operations the commands call.
package iam

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/iam/policy"
)

// NewCmd returns the iam command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "iam", Short: "Least-privilege IAM policies for koshactl's roles"}
	cmd.AddCommand(policy.NewCmd(f))
	return cmd
}
