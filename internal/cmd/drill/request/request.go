// Package request implements `koshactl drill request`: ask for the
// approvals a table's policy needs before a drill may pull its levers.
package request

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmd/levercmd"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and argument.
type Options struct {
	File       string
	Vars       []string
	Reason     string
	RequestTTL time.Duration
	NoNotify   bool
	Output     string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "request FILE",
		Short: "Ask for the approvals the table's policy needs before a drill may pull its levers",
		Long: heredoc.Doc(`
			Make a change request of kind drill.run for the drill in FILE on its context:
			it names the file's SHA-256 (of its bytes), the drill's name, the context and
			the levers its steps pull (as drill plan shows them, with --var and the
			environment resolved). Nothing is run.

			Another person approves it with koshactl request approve ID, which applies
			nothing: the request becomes approved, and koshactl drill run FILE --request ID
			may then pull those levers until the request expires (--request-ttl). Editing
			the file, or another --var that moves other levers, needs a new request.

			Exit codes: 12 the request was made and waits for its approvals; 2 the drill
			is invalid; 7 the table's policy denies one of its levers; 1 the table's
			policy needs no approval for this drill (run it as it is).
		`),
		Example: heredoc.Doc(`
			koshactl drill request docs/drills/openai-outage.yaml --reason "game day"
			koshactl request approve 3f2a9c1b0d4e
			koshactl drill run docs/drills/openai-outage.yaml --request 3f2a9c1b0d4e
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Vars, "var", nil, "set one of the drill's vars, NAME=VALUE (repeatable), as the run will")
	fl.StringVar(&opts.Reason, "reason", "", "why the drill should run (shown to the approvers)")
	fl.DurationVar(&opts.RequestTTL, "request-ttl", approval.DefaultTTL,
		fmt.Sprintf("how long the request waits for its approvals, and the approved drill may run (%s to %s)", approval.MinTTL, approval.MaxTTL))
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run makes the request.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	if err := approval.CheckTTL(opts.RequestTTL); err != nil {
		return cmdutil.Usagef("--request-ttl: %v", err)
	}
	d, err := run.Parse(f, opts.File, opts.Vars, "; nothing was requested")
	if err != nil {
		return err
	}
	env, err := run.Resolve(ctx, f, d, "")
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	deps, err := run.NewDeps(ctx, f, env, "")
	if err != nil {
		return err
	}
	dr, err := runner.DrillRun(d, deps)
	if err != nil {
		return cmdutil.Usagef("drill %s: %s: set it with --var or the environment; nothing was requested", textsafe.Line(d.Name), textsafe.Line(err.Error()))
	}
	who, err := env.CallerIdentity(ctx)
	if err != nil {
		return err
	}
	r, rec, err := env.Approvals().SubmitDrill(ctx, env.Audit(), dr, who, cmp.Or(opts.Reason, "drill "+d.Name), opts.RequestTTL)
	if err != nil {
		return err
	}
	rep, err := approval.Pending(r, rec, opts.NoNotify)
	return levercmd.Refused(ctx, f, env, rep, err, levercmd.Flags{Output: opts.Output})
}
