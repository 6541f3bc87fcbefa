package chaos

import (
	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/chaos/key"
	"github.com/kosha-platform/koshactl/internal/cmd/chaos/sign"
	"github.com/kosha-platform/koshactl/internal/cmd/chaos/verify"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
)

// NewCmd returns the chaos command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Mint and check signed chaos fault-injection headers; manage their key",
		Long: heredoc.Doc(`
			X-Kosha-Chaos headers ask the data plane to inject a fault (latency, error,
			timeout, reset) into calls to one downstream, with a probability, for at most
			15 minutes. The data plane honors a header only if it passes every check
			(chaos verify shows them), CHAOS_ENABLED=true, and the caller has the operator
			role; otherwise it ignores the header and audits the attempt.

			Headers are HMAC-SHA256 signed. The key comes from, first match wins:
			  --key-file PATH          (sign, verify, key id; for CI and tests)
			  chaos.key-file           a file of the context, mode 0600
			  chaos.key-env            an environment variable of the context
			  chaos.secret-id          an AWS Secrets Manager secret of the context
			                           (AWSCURRENT signs; AWSCURRENT and AWSPREVIOUS verify)
			  the local context        a key in the state directory, generated on first use
			Configure them with koshactl config set-context NAME --chaos-secret-id ID
			(or --chaos-key-file, --chaos-key-env). Keys never appear in output, logs,
			errors or audit records.

			Wire format and checks: docs/contracts/chaos-header.md; guide: docs/chaos.md.
		`),
	}
	cmd.AddCommand(sign.NewCmd(f, nil), verify.NewCmd(f), key.NewCmd(f))
	return cmd
}
