// Package root assembles koshactl's command tree and runs it: global flags,
// error printing and the mapping of errors to documented exit codes.
package root

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	auditcmd "github.com/kosha-platform/koshactl/internal/cmd/audit"
	breakercmd "github.com/kosha-platform/koshactl/internal/cmd/breaker"
	canicmd "github.com/kosha-platform/koshactl/internal/cmd/cani"
	chaoscmd "github.com/kosha-platform/koshactl/internal/cmd/chaos"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	configcmd "github.com/kosha-platform/koshactl/internal/cmd/config"
	drillcmd "github.com/kosha-platform/koshactl/internal/cmd/drill"
	freezecmd "github.com/kosha-platform/koshactl/internal/cmd/freeze"
	iamcmd "github.com/kosha-platform/koshactl/internal/cmd/iam"
	applycmd "github.com/kosha-platform/koshactl/internal/cmd/levers/apply"
	diffcmd "github.com/kosha-platform/koshactl/internal/cmd/levers/diff"
	policycmd "github.com/kosha-platform/koshactl/internal/cmd/policy"
	ratelimitcmd "github.com/kosha-platform/koshactl/internal/cmd/ratelimit"
	requestcmd "github.com/kosha-platform/koshactl/internal/cmd/request"
	storecmd "github.com/kosha-platform/koshactl/internal/cmd/store"
	versioncmd "github.com/kosha-platform/koshactl/internal/cmd/version"
	whoamicmd "github.com/kosha-platform/koshactl/internal/cmd/whoami"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// groups are the top-level commands every koshactl program links, in the
// tree's order; a program adds its own (the full program's mcp, dashboard
// and sandbox: cmdenv.Factory.Groups). Each names itself exactly as the
// command it builds does (TestGroupsNameTheirCommands).
var groups = []cmdenv.Group{
	{Names: []string{"breaker"}, Build: breakercmd.NewCmd},
	{Names: []string{"ratelimit", "rl"}, Build: ratelimitcmd.NewCmd},
	{Names: []string{"chaos"}, Build: chaoscmd.NewCmd},
	{Names: []string{"drill"}, Build: drillcmd.NewCmd},
	{Names: []string{"freeze"}, Build: freezecmd.NewCmd},
	{Names: []string{"request"}, Build: requestcmd.NewCmd},
	{Names: []string{"diff"}, Build: func(f *cmdenv.Factory) *cobra.Command { return diffcmd.NewCmd(f, nil) }},
	{Names: []string{"apply"}, Build: func(f *cmdenv.Factory) *cobra.Command { return applycmd.NewCmd(f, nil) }},
	{Names: []string{"policy"}, Build: policycmd.NewCmd},
	{Names: []string{"can-i"}, Build: canicmd.NewCmd},
	{Names: []string{"whoami"}, Build: whoamicmd.NewCmd},
	{Names: []string{"audit"}, Build: auditcmd.NewCmd},
	{Names: []string{"config"}, Build: configcmd.NewCmd},
	{Names: []string{"store"}, Build: storecmd.NewCmd},
	{Names: []string{"iam"}, Build: iamcmd.NewCmd},
	{Names: []string{"version"}, Build: versioncmd.NewCmd},
}

// storeFree are the groups that never open the context's store: the front
// runs them on a local context too.
var storeFree = []string{"config", "iam", "version"}

// NewCmd builds the whole command tree on f: the common groups and f's.
// started is set once argument parsing succeeded and a command's own code
// runs, so errors before that are reported as usage errors.
func NewCmd(f *cmdenv.Factory, started *bool) *cobra.Command {
	return newCmd(f, started, "", nil)
}

// globalFlags are the persistent flags of the root command, each with
// whether it takes a value as the next argument.
var globalFlags = map[string]bool{"--context": true, "--debug": false, "--no-color": false, "--no-headers": false}

// groupOf is the top-level command args run when, past the global flags
// (`--context dev`), they name one of f's groups or aliases (`koshactl
// version`, `koshactl --context prod breaker force-open ...`), else "".
// Anything else (help, completion, a typo, another flag first) needs the
// whole tree.
func groupOf(f *cmdenv.Factory, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		if takesValue, global := globalFlags[name]; global {
			if takesValue && !hasValue {
				i++
			}
			continue
		}
		for _, g := range allGroups(f) {
			if slices.Contains(g.Names, a) {
				return a
			}
		}
		return ""
	}
	return ""
}

// allGroups are the common groups and f's.
func allGroups(f *cmdenv.Factory) []cmdenv.Group { return append(slices.Clip(groups), f.Groups...) }

// newCmd builds the tree with every group, or, when only names one, with
// that group alone: a command runs the same in either (its help, errors and
// hints never mention a sibling group), and a process that runs one command
// does not build the other sixty.
func newCmd(f *cmdenv.Factory, started *bool, only string, args []string) *cobra.Command {
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
	_ = cmd.RegisterFlagCompletionFunc("context", cmdenv.CompleteContexts(f))
	var noColor, noHeaders bool
	pf := cmd.PersistentFlags()
	pf.BoolVar(&f.Debug, "debug", f.Debug, "print each AWS request on stderr: operation, status, latency, attempts, request id (never credentials or secrets)")
	pf.BoolVar(&noColor, "no-color", false, "never use color (as when NO_COLOR is set)")
	pf.BoolVar(&noHeaders, "no-headers", false, "print tables without their header line")
	pf.Var(&requestTimeoutFlag{f}, "request-timeout", "bound on one AWS request, each attempt (1s to 1h; default: the context's request-timeout, else 10s): "+
		"allow more for a slow endpoint or a large change")
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := handOff(f, c, args); err != nil {
			return err
		}
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
	for _, g := range allGroups(f) {
		if only == "" || slices.Contains(g.Names, only) {
			cmd.AddCommand(g.Build(f))
		}
	}
	if only != "" {
		// A group named first is never completion: cobra's completion
		// commands (and their help texts) are built for the whole tree only.
		cmd.CompletionOptions.DisableDefaultCmd = true
	}
	cmdutil.GuardArgs(cmd)
	markStarted(cmd, func(c *cobra.Command) {
		*started = true
		if f.OnRun != nil && cmdutil.HandlesInterrupts(c) {
			f.OnRun()
		}
	})
	return cmd
}

// contextFlag is --context: it sets the factory's context name and records
// that the flag chose it (cmdenv.Factory.SelectContext tells the sources
// apart for config current-context and get-contexts).
type contextFlag struct{ f *cmdenv.Factory }

func (c *contextFlag) String() string { return c.f.ContextName }
func (c *contextFlag) Type() string   { return "string" }
func (c *contextFlag) Set(v string) error {
	c.f.ContextName, c.f.ContextFlagSet = v, true
	return nil
}

// requestTimeoutFlag is --request-timeout: a duration in the range of
// [config.CheckRequestTimeout], refused as the flag is parsed (exit 2).
type requestTimeoutFlag struct{ f *cmdenv.Factory }

func (r *requestTimeoutFlag) String() string {
	if r.f.RequestTimeout == 0 {
		return ""
	}
	return human.Duration(r.f.RequestTimeout)
}
func (r *requestTimeoutFlag) Type() string { return "duration" }
func (r *requestTimeoutFlag) Set(v string) error {
	d, err := human.ParseDuration(v)
	if err != nil {
		return err
	}
	if err := config.CheckRequestTimeout(d); err != nil {
		return err
	}
	r.f.RequestTimeout = d
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

// markStarted wraps every command's RunE so start runs once cobra has
// finished validating arguments and flags: errors before that are usage
// errors, and the command's own code (which may need to be interrupted)
// starts after it.
func markStarted(cmd *cobra.Command, start func(*cobra.Command)) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			start(c)
			return run(c, args)
		}
	}
	for _, sub := range cmd.Commands() {
		markStarted(sub, start)
	}
}

// Main runs a koshactl program's process: args on f, SIGINT and SIGTERM
// canceling the command's context from the moment its own code runs, and
// returns the exit code. The handler is installed then, not before: it
// costs a locked OS thread and two round trips to it, which a process that
// only parses its arguments or prints its version does not need.
func Main(f *cmdenv.Factory, args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.OnRun = sync.OnceFunc(func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
		go func() {
			select {
			case <-signals:
				cancel()
			case <-ctx.Done():
			}
		}()
	})
	return Run(ctx, f, args)
}

// Run executes args on f and returns the process exit code, having printed
// any error as one line on stderr.
//
// Everything printed goes through a [textsafe.Writer]: whatever a command
// prints from the table, an HTTP answer or the environment, no raw control
// character or bidi control reaches the terminal. Tables and fields render
// their values with textsafe.Line themselves (so a newline cannot forge a
// row); the writer is the backstop for any value they do not.
func Run(ctx context.Context, f *cmdenv.Factory, args []string) int {
	return run(ctx, f, args, groupOf(f, args))
}

// run is [Run] building the tree of group only (the whole tree when "").
func run(ctx context.Context, f *cmdenv.Factory, args []string, only string) int {
	out, errOut := textsafe.NewWriter(f.IOStreams.Out), textsafe.NewWriter(f.IOStreams.ErrOut)
	f.IOStreams.Out, f.IOStreams.ErrOut = out, errOut
	defer func() {
		f.IOStreams.Out, f.IOStreams.ErrOut = textsafe.Raw(out), textsafe.Raw(errOut)
		_ = out.Flush()
		_ = errOut.Flush()
	}()
	started := false
	var opened *cmdenv.Env
	if resolve := f.Env; resolve != nil {
		f.Env = func(ctx context.Context) (*cmdenv.Env, error) {
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
	var err error
	if f.HandOff != nil && only == "" {
		// The whole tree (help, completion, a typo) is the full program's.
		err = reportHandOff(f.HandOff(args))
	} else {
		cmd := newCmd(f, &started, only, args)
		guardCompletion(cmd, args)
		cmd.SetArgs(args)
		err = cmd.ExecuteContext(ctx)
	}
	if err == nil {
		return exitcode.OK
	}
	if !errors.Is(err, cmdutil.ErrSilent) {
		for _, line := range errorLines(err) {
			fmt.Fprintf(f.IOStreams.ErrOut, "error: %s\n", line)
		}
		var hinted *cmdutil.HintError
		if errors.As(err, &hinted) && hinted.Hint != "" {
			fmt.Fprintln(f.IOStreams.ErrOut, textsafe.OneLine(hinted.Hint))
		}
	}
	code := exitcode.Of(err)
	if !started && code == exitcode.Error {
		code = exitcode.Usage
	}
	// An interrupted command exits 130 unless it chose its own code (a drill
	// whose rollback failed after the interrupt exits 9), or made a change
	// whose audit record the interrupt stopped (exit 8: the change was made).
	if ctx.Err() != nil && code != exitcode.OK && code != exitcode.Unknown && !exitcode.Decided(err) {
		code = exitcode.Interrupted
	}
	return code
}

// errorLines are the lines err is printed as, each by [textsafe.OneLine]:
// one, unless it is (or ends with) a [cmdutil.LinesError], whose lines each
// get one, the first after what the wrapping errors say.
func errorLines(err error) []string {
	var le cmdutil.LinesError
	if errors.As(err, &le) {
		lines := le.ErrorLines()
		if prefix, ok := strings.CutSuffix(err.Error(), le.Error()); ok && len(lines) > 1 {
			out := make([]string, len(lines))
			for i, l := range lines {
				out[i] = textsafe.OneLine(l)
			}
			out[0] = textsafe.OneLine(prefix + lines[0])
			return out
		}
	}
	return []string{textsafe.OneLine(err.Error())}
}

// handOff runs the invocation in the full program when the front (a
// factory with HandOff) meets what it does not link, once the flags are
// parsed and before any command's own code: --jq, or a local context's
// store. It returns only when it could not.
func handOff(f *cmdenv.Factory, c *cobra.Command, args []string) error {
	if f.HandOff == nil {
		return nil
	}
	if jq := c.Flags().Lookup("jq"); jq != nil && jq.Changed {
		return reportHandOff(f.HandOff(args))
	}
	top := c
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	if slices.Contains(storeFree, top.Name()) {
		return nil
	}
	// A config or context that cannot be read is the command's to report.
	if _, ctx, err := f.SelectedContext(); err == nil && ctx.IsLocal() {
		return reportHandOff(f.HandOff(args))
	}
	return nil
}

// reportHandOff is the error of a hand-off that did not happen (exit 5:
// the full program could not be started).
func reportHandOff(err error) error {
	if err == nil {
		return nil
	}
	return exitcode.Errorf(exitcode.Unavailable, "%v", err)
}
