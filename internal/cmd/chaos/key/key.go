package key

import (
	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/chaos/key/id"
	"github.com/kosha-platform/koshactl/internal/cmd/chaos/key/rotate"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
)

// NewCmd returns the chaos key command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Show the chaos key ids, or rotate the signing key",
		Long: heredoc.Doc(`
			The chaos signing key itself is never printed, logged or audited; it is named by
			its kid, the first 8 bytes of SHA-256("kosha-chaos-kid:" || key) in base64url,
			which the header carries too.
		`),
	}
	cmd.AddCommand(id.NewCmd(f), rotate.NewCmd(f))
	return cmd
}
