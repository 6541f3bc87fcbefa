// Package store implements `koshactl store`: administration of the context's
// store (creating the DynamoDB table for development and drills).
package store

import (
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/store/migrate"
	"github.com/kosha-platform/koshactl/internal/cmd/store/storeinit"
)

// NewCmd returns the store command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Administer the context's store"}
	cmd.AddCommand(storeinit.NewCmd(f), migrate.NewCmd(f))
	return cmd
}
