package drill

import (
	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/plan"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/recovery"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/report"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/request"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/validate"
)

// NewCmd returns the drill command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drill",
		Short: "Run incident drills from YAML files: game days as code, with rollback you can trust",
		Long: heredoc.Doc(`
			A drill is a YAML file: a steady-state hypothesis checked before and after,
			steps that pull levers (force a breaker open, drain a client's bucket, mint a
			chaos header) and check how the platform degrades, stop conditions, and extra
			rollbacks. See docs/contracts/drill-file.md and the examples in docs/drills/.

			Every lever a drill pulls registers its rollback before it acts, and every
			rollback runs, in reverse order, however the run ends: success, a failed step,
			a timeout, a stop condition, SIGINT or SIGTERM. Overrides and chaos headers a
			drill creates expire by the drill's deadline, so even a killed run converges;
			drill recover finishes a killed run's rollbacks sooner, from its journal.

			drill plan shows what a drill would do (every lever, its inverse and expiry,
			the conditions watched, the context and store) without doing it. drill
			report renders a run's journal as a game-day report (HTML, or Markdown for a
			CI step summary).
		`),
	}
	cmd.AddCommand(run.NewCmd(f, nil), validate.NewCmd(f), kinds.NewCmd(f), recovery.NewCmd(f), plan.NewCmd(f),
		report.NewCmd(f, nil), request.NewCmd(f))
	return cmd
}
