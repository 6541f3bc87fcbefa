// Package root assembles koshactl's command tree and runs it: global flags,
// error printing and the mapping of errors to documented exit codes.
package root

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	auditcmd "github.com/kosha-platform/koshactl/internal/cmd/audit"
	breakercmd "github.com/kosha-platform/koshactl/internal/cmd/breaker"
	chaoscmd "github.com/kosha-platform/koshactl/internal/cmd/chaos"
	configcmd "github.com/kosha-platform/koshactl/internal/cmd/config"
	dashboardcmd "github.com/kosha-platform/koshactl/internal/cmd/dashboard"
	drillcmd "github.com/kosha-platform/koshactl/internal/cmd/drill"
	iamcmd "github.com/kosha-platform/koshactl/internal/cmd/iam"
	ratelimitcmd "github.com/kosha-platform/koshactl/internal/cmd/ratelimit"
	sandboxcmd "github.com/kosha-platform/koshactl/internal/cmd/sandbox"
	storecmd "github.com/kosha-platform/koshactl/internal/cmd/store"
	versioncmd "github.com/kosha-platform/koshactl/internal/cmd/version"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// NewCmd builds the whole command tree on f. started is set once argument
// parsing succeeded and a command's own code runs, so errors before that are
// reported as usage errors.
func NewCmd(f *cmdutil.Factory, started *bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "koshactl",
		Short: "Operate the Kosha resilience layer: breaker overrides, rate limits, chaos, drills",
		Long: heredoc.Doc(`
			koshactl is the operator CLI and control plane of the Kosha resilience layer.
			It forces and clears fleet-wide breaker overrides, inspects and resets rate-limit
			buckets, mints signed chaos headers, shows the fleet's breaker gauges, runs
			incident drills, and runs a local sandbox fleet for practice.

			Every command acts on one context (--context, $KOSHACTL_CONTEXT, or the current
			one); with no config file that is the built-in "local" context.
		`),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.PersistentFlags().Var(&contextFlag{f}, "context", "context to act on (default: $KOSHACTL_CONTEXT, else the config file's current context)")
	_ = cmd.RegisterFlagCompletionFunc("context", cmdutil.CompleteContexts(f))
	var noColor, noHeaders bool
	pf := cmd.PersistentFlags()
	pf.BoolVar(&f.Debug, "debug", f.Debug, "print each AWS request on stderr: operation, status, latency, attempts, request id (never credentials or secrets)")
	pf.BoolVar(&noColor, "no-color", false, "never use color (as when NO_COLOR is set)")
	pf.BoolVar(&noHeaders, "no-headers", false, "print tables without their header line")
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error {
		if noColor {
			f.IOStreams.SetColorEnabled(false)
		}
		f.IOStreams.SetNoHeaders(noHeaders)
		return nil
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cmdutil.Usagef("%v (see %s --help)", err, c.CommandPath())
	})
	cmd.SetIn(f.IOStreams.In)
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	cmd.AddCommand(
		breakercmd.NewCmd(f),
		dashboardcmd.NewCmd(f, nil),
		ratelimitcmd.NewCmd(f),
		sandboxcmd.NewCmd(f, nil),
		chaoscmd.NewCmd(f),
		drillcmd.NewCmd(f),
		auditcmd.NewCmd(f),
		configcmd.NewCmd(f),
		storecmd.NewCmd(f),
		iamcmd.NewCmd(f),
		versioncmd.NewCmd(f),
	)
	cmdutil.GuardArgs(cmd)
	markStarted(cmd, started)
	return cmd
}

// contextFlag is --context: it sets the factory's context name and records
// that the flag chose it (cmdutil.Factory.SelectContext tells the sources
// apart for config current-context and get-contexts).
type contextFlag struct{ f *cmdutil.Factory }

func (c *contextFlag) String() string { return c.f.ContextName }
func (c *contextFlag) Type() string   { return "string" }
func (c *contextFlag) Set(v string) error {
	c.f.ContextName, c.f.ContextFlagSet = v, true
	return nil
}

// guardCompletion adds cobra's completion command now rather than when the
// tree runs (as cobra would), so that `koshactl completion bsh` is refused
// like any other group's unknown subcommand. It stays out of NewCmd: the
// CLI reference in docs/cli documents koshactl's own commands.
func guardCompletion(cmd *cobra.Command, args []string) {
	cmd.InitDefaultCompletionCmd(args...)
	for _, c := range cmd.Commands() {
		if c.Name() == "completion" && c.HasSubCommands() {
			cmdutil.GuardArgs(c)
		}
	}
}

// markStarted wraps every command's RunE so *started is set once cobra has
// finished validating arguments and flags: errors before that are usage errors.
func markStarted(cmd *cobra.Command, started *bool) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			*started = true
			return run(c, args)
		}
	}
	for _, sub := range cmd.Commands() {
		markStarted(sub, started)
	}
}

// Run executes args on f and returns the process exit code, having printed
// any error as one line on stderr.
//
// Everything printed goes through a [textsafe.Writer]: whatever a command
// prints from the table, an HTTP answer or the environment, no raw control
// character or bidi control reaches the terminal. Tables and fields render
// their values with textsafe.Line themselves (so a newline cannot forge a
// row); the writer is the backstop for any value they do not.
func Run(ctx context.Context, f *cmdutil.Factory, args []string) int {
	out, errOut := textsafe.NewWriter(f.IOStreams.Out), textsafe.NewWriter(f.IOStreams.ErrOut)
	f.IOStreams.Out, f.IOStreams.ErrOut = out, errOut
	defer func() {
		f.IOStreams.Out, f.IOStreams.ErrOut = textsafe.Raw(out), textsafe.Raw(errOut)
		_ = out.Flush()
		_ = errOut.Flush()
	}()
	started := false
	var opened *cmdutil.Env
	if resolve := f.Env; resolve != nil {
		f.Env = func(ctx context.Context) (*cmdutil.Env, error) {
			e, err := resolve(ctx)
			if err == nil {
				opened = e
			}
			return e, err
		}
		defer func() {
			if opened != nil && opened.Store != nil {
				_ = opened.Store.Close()
			}
		}()
	}
	cmd := NewCmd(f, &started)
	guardCompletion(cmd, args)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	if !errors.Is(err, cmdutil.ErrSilent) {
		fmt.Fprintf(f.IOStreams.ErrOut, "error: %s\n", textsafe.Line(oneLine(err)))
		var hinted *cmdutil.HintError
		if errors.As(err, &hinted) && hinted.Hint != "" {
			fmt.Fprintln(f.IOStreams.ErrOut, textsafe.Line(oneLine(errors.New(hinted.Hint))))
		}
		// A change made whose audit record did not land (exit 8, however
		// it failed: an error or an interrupt): the command that writes it.
		var unwritten *audit.UnwrittenError
		if errors.As(err, &unwritten) && opened != nil {
			fmt.Fprintln(f.IOStreams.ErrOut, "write the missing audit record with: "+textsafe.Line(unwritten.RepairCommand(opened.Name)))
		}
	}
	code := cmdutil.ExitCode(err)
	if !started && code == cmdutil.ExitError {
		code = cmdutil.ExitUsage
	}
	// An interrupted command exits 130 unless it chose its own code (a drill
	// whose rollback failed after the interrupt exits 9), or made a change
	// whose audit record the interrupt stopped (exit 8: the change was made).
	var explicit *cmdutil.ExitErr
	if ctx.Err() != nil && code != cmdutil.ExitOK && code != cmdutil.ExitAudit && !errors.As(err, &explicit) {
		code = cmdutil.ExitCancelled
	}
	return code
}

// oneLine joins a wrapped, multi-line message on spaces, tabs and newlines;
// any other control (a CR from a stored value) is left for textsafe.Line to
// show as an escape.
func oneLine(err error) string {
	return strings.Join(strings.FieldsFunc(err.Error(), func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }), " ")
}
