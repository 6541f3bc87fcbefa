// Package config implements `koshactl config`: view the configuration and
// manage named contexts without editing YAML by hand.
package config

import (
	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/config/currentcontext"
	"github.com/kosha-platform/koshactl/internal/cmd/config/deletecontext"
	"github.com/kosha-platform/koshactl/internal/cmd/config/getcontexts"
	"github.com/kosha-platform/koshactl/internal/cmd/config/setcontext"
	"github.com/kosha-platform/koshactl/internal/cmd/config/usecontext"
	"github.com/kosha-platform/koshactl/internal/cmd/config/view"
)

// NewCmd returns the config command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Manage contexts: which store, dependencies, keys and metrics koshactl uses",
		Long: heredoc.Doc(`
			koshactl reads its contexts from $KOSHACTL_CONFIG, else the user config dir
			(koshactl/config.yaml). With no file at all it uses the built-in "local"
			context, backed by the embedded store under the user state dir.
		`),
	}
	cmd.AddCommand(view.NewCmd(f), getcontexts.NewCmd(f), currentcontext.NewCmd(f), usecontext.NewCmd(f), setcontext.NewCmd(f), deletecontext.NewCmd(f))
	return cmd
}
