package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/cmd/gaugeenv"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and argument.
type Options struct {
	File    string
	JUnit   string
	Journal string
	// Report is the game-day report written when the run ends (Markdown
	// for a .md name, HTML otherwise).
	Report         string
	AllowProtected bool
	NoNotify       bool
	// Vars override the drill's vars: NAME=VALUE.
	Vars       []string
	MetricsURL string
	KeyFile    string
	Output     string
	// Request is the approved drill.run change request (--request) a
	// table whose policy needs approvals for the drill's levers asks for.
	Request string
	// Signals, when set, delivers SIGINT/SIGTERM to the run: the first
	// interrupts the steps (as canceling ctx does), the second is
	// acknowledged, the third abandons the remaining rollbacks. NewCmd
	// sets it; tests may feed it.
	Signals <-chan os.Signal
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a drill: check the hypothesis, pull the levers, check the degradation, roll everything back",
		Long: heredoc.Doc(`
			Run the drill in FILE against its context: the drill's context: field when
			it names one, otherwise --context, $KOSHACTL_CONTEXT or the current context.
			A drill that names a context refuses to run on a different one selected with
			--context or $KOSHACTL_CONTEXT. A protected context needs allow_protected:
			true in the drill AND --allow-protected here.

			The run checks the hypothesis, runs the steps (stop conditions are watched
			throughout), then runs every registered rollback in reverse order, each on a
			fresh context with its own timeout, and checks the hypothesis again. Every
			override and chaos header the drill creates expires by the drill's deadline.

			A live log goes to stderr. --journal writes the JSON journal (rewritten after
			every step, so even a killed run leaves one naming each lever and its expiry,
			from which drill recover finishes its rollbacks; the run holds JOURNAL.lock
			while it lives); --junit writes JUnit XML for CI. -o json prints the journal on
			stdout. --report writes the game-day report when the run ends (one
			self-contained HTML file, or Markdown for a .md name; see drill report). drill
			plan shows what the run would do without doing it.

			Signals: the first SIGINT or SIGTERM stops the steps and rolls back. A second
			one is acknowledged and the rollback goes on. A third abandons the remaining
			rollbacks: each is reported as abandoned with the time its lever lapses on its
			own, and the exit code is 9.

			Before anything is done, every stop condition and hypothesis check is
			evaluated once (the preflight). One that cannot be evaluated (its alarm
			matches nothing, the caller is denied, the source is unreachable or
			throttled) refuses the run: nothing is written but the journal and the
			reports saying so. During the run a guard that stays unevaluable past the
			drill's guard_grace (default 3 polls and 30s) stops the steps and rolls back:
			the outcome is guard_lost (a condition may say on_error: continue instead).

			On a table whose policy (koshactl policy set) needs approvals for any lever
			the drill pulls (its variables resolved), the run needs an approved drill
			request for this file (its SHA-256) and context: koshactl drill request FILE
			makes one; another person approves it with koshactl request approve ID; then
			pass --request ID. Without one the run is refused before any lever (exit 12);
			a request expired, denied or canceled exits 13; a file edited since the
			request, another context or other levers (another --var) exit 14.

			Exit codes: 0 the hypothesis held and every rollback succeeded; 1 the
			hypothesis or a step failed, a stop condition held or the drill timed out
			(every rollback succeeded); 2 invalid drill file; 3, 5 or 6 refused at
			preflight or a guard lost, by its cause (3 its alarm matches nothing, 5
			unreachable or throttled, 6 denied); 7 protected context refused; 9 a
			rollback failed or was abandoned, or its outcome is unknown (the store could
			not be reached to settle it: its line names the get command that tells); 130
			interrupted, every rollback succeeded. Each lever change and its audit record
			are one write: a rollback restored its lever with its record, or it did not.
			12, 13 or 14 refused by the table's policy (see above).
		`),
		Example: heredoc.Doc(`
			koshactl drill run docs/drills/openai-outage.yaml
			koshactl drill run flood.yaml --junit out/drill.xml --journal out/drill.json
			SANDBOX_URL=http://127.0.0.1:9000 koshactl drill run docs/drills/flooding-client.yaml
			koshactl drill run game-day.yaml --context staging --allow-protected --var region=eu-west-1
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			if opts.Signals == nil {
				sigs := make(chan os.Signal, 4)
				signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
				defer signal.Stop(sigs)
				opts.Signals = sigs
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.JUnit, "junit", "", "write a JUnit XML report to this file")
	fl.StringVar(&opts.Journal, "journal", "", "write the JSON journal to this file (kept current during the run)")
	fl.StringVar(&opts.Report, "report", "", "write the game-day report to this file when the run ends (HTML; Markdown for a .md name)")
	fl.BoolVar(&opts.AllowProtected, "allow-protected", false, "allow a protected context (the drill must say allow_protected: true too)")
	fl.StringArrayVar(&opts.Vars, "var", nil, "set one of the drill's vars, NAME=VALUE (repeatable)")
	fl.StringVar(&opts.Request, "request", "", "the approved drill request (koshactl drill request FILE) a table whose policy needs approvals for the drill's levers asks for")
	fl.StringVar(&opts.MetricsURL, "metrics-url", "", "read breaker gauges from this Prometheus endpoint (overrides the drill's metrics_url and the context's source)")
	cmdenv.AddKeyFileFlag(cmd, &opts.KeyFile)
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	_ = cmd.MarkFlagFilename("junit")
	_ = cmd.MarkFlagFilename("journal")
	return cmd
}

// Run runs the drill and returns an error carrying the run's exit code.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	ios := f.IOStreams
	d, err := Parse(f, opts.File, opts.Vars, "; nothing was run")
	if err != nil {
		return err
	}
	// The journal is read back by drill recover: a regular file only. The
	// JUnit report may be a pipe or device, written in place.
	if err := checkReportPath(opts.Journal, false); err != nil {
		return cmdutil.Usagef("--journal %s: %v; nothing was run", opts.Journal, err)
	}
	if err := checkReportPath(opts.JUnit, true); err != nil {
		return cmdutil.Usagef("--junit %s: %v; nothing was run", opts.JUnit, err)
	}
	if err := checkReportPath(opts.Report, true); err != nil {
		return cmdutil.Usagef("--report %s: %v; nothing was run", opts.Report, err)
	}
	env, err := Resolve(ctx, f, d, opts.MetricsURL)
	if err != nil {
		return err
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	if env.Context.Protected && (!d.AllowProtected || !opts.AllowProtected) {
		why := "the drill does not say allow_protected: true"
		if d.AllowProtected {
			why = "pass --allow-protected"
		} else if opts.AllowProtected {
			why = "--allow-protected was given, but the drill does not say allow_protected: true"
		}
		return exitcode.Errorf(exitcode.Refused, "context %q is protected: %s; both are needed to drill on it", env.Name, why)
	}
	deps, err := NewDeps(ctx, f, env, opts.KeyFile)
	if err != nil {
		return err
	}
	color := ios.IsStderrTTY() && ios.ColorEnabled()
	logW := ios.ErrOut
	if color { // the log renders its values itself; its colors must reach the terminal
		logW = textsafe.Raw(logW)
	}
	r := &runner.Runner{Deps: deps, Reporters: []runner.Reporter{&runner.LiveLog{W: logW, TTY: ios.IsStderrTTY(), Color: color}},
		Approvals: env.Approvals(), Identity: env.CallerIdentity, Request: opts.Request,
		Freeze: func(ctx context.Context) (*freeze.Freeze, error) { return freeze.Read(ctx, env.Store) }}
	if !opts.NoNotify && env.Notifier != nil {
		r.Notifier = env.Notifier.For(notify.SourceDrill, nil)
	}
	s := &runner.Session{Runner: r, Journal: opts.Journal, JUnit: opts.JUnit, Report: opts.Report, Signals: opts.Signals}
	if err := s.Lock(); errors.Is(err, runner.ErrJournalLocked) {
		return exitcode.Errorf(exitcode.Conflict, "--journal %s is in use by a live drill run or recover (its lock %s is held): use another journal file; nothing was run",
			opts.Journal, runner.LockPath(opts.Journal))
	} else if err != nil {
		return cmdutil.Usagef("--journal %s: cannot lock it: %v; nothing was run", opts.Journal, err)
	}
	defer s.Close()
	j, outcome := s.Run(ctx, d)
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, j); err != nil {
			return err
		}
	} else {
		printSummary(f, j)
	}
	reportErr := s.Finish(j)
	if outcome == nil {
		return reportErr
	}
	// The run's outcome is the command's error: a report that failed too
	// is said on a line of its own.
	if reportErr != nil {
		fmt.Fprintf(ios.ErrOut, "error: %s\n", textsafe.OneLine(reportErr.Error()))
	}
	if j.Outcome == drill.OutcomeRefused {
		return outcome // nothing was done: the refusal is said in full
	}
	return fmt.Errorf("%w: %w", cmdutil.ErrSilent, outcome)
}

// checkReportPath checks, before anything runs, that a report can be
// written at path under fsutil's output policy (special: a pipe or device
// may be written in place): a drill whose journal cannot be kept should
// not start.
func checkReportPath(path string, special bool) error {
	if path == "" {
		return nil
	}
	err := fsutil.CheckOutput(path, special)
	if err == nil || errors.Is(err, fsutil.ErrOutputRefused) {
		return err
	}
	return fmt.Errorf("cannot write there: %w", fsutil.Cause(err))
}

// Parse parses the drill in file, printing its problems (exit 2, the
// message ending in after), and applies --var: the first thing drill plan
// and drill run do.
func Parse(f *cmdenv.Factory, file string, vars []string, after string) (*drill.Drill, error) {
	d, probs := drill.ParseFile(kinds.Builtin(), file)
	if len(probs) == 1 && probs[0].Unreadable() {
		// One line, as every error: the file and why it cannot be read.
		return nil, cmdutil.Usagef("%s%s", probs[0], after)
	}
	if len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(f.IOStreams.ErrOut, p.String())
		}
		return nil, cmdutil.Usagef("%w: %s is not a valid drill (%s)%s", cmdutil.ErrSilent, file, human.Count(int64(len(probs)), "problem"), after)
	}
	return d, ApplyVars(d, vars)
}

// Resolve applies --metrics-url and resolves the drill's context: its
// context: field when it names one (another selected with --context or
// $KOSHACTL_CONTEXT is refused), otherwise the selected one.
func Resolve(ctx context.Context, f *cmdenv.Factory, d *drill.Drill, metricsURL string) (*cmdenv.Env, error) {
	if metricsURL != "" {
		d.MetricsURL = drill.Literal(metricsURL)
	}
	if d.Context != "" && f.ContextName != "" && f.ContextName != d.Context {
		return nil, cmdutil.Usagef("drill %s is written for context %q, but --context (or $KOSHACTL_CONTEXT) selects %q: run it on %q, or change the drill's context: field",
			d.Name, d.Context, f.ContextName, d.Context)
	}
	f.ContextName = cmp.Or(d.Context, f.ContextName)
	return f.Env(ctx)
}

// ApplyVars overrides drill variables from --var NAME=VALUE.
func ApplyVars(d *drill.Drill, vars []string) error {
	for _, kv := range vars {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return cmdutil.Usagef("--var %q: write it as NAME=VALUE", kv)
		}
		found := false
		for i := range d.Vars {
			if d.Vars[i].Name == name {
				d.Vars[i].Value, found = drill.Literal(value), true
			}
		}
		if !found {
			names := make([]string, len(d.Vars))
			for i, v := range d.Vars {
				names[i] = v.Name
			}
			sort.Strings(names)
			if len(names) == 0 {
				return cmdutil.Usagef("--var %s: drill %s declares no vars", name, d.Name)
			}
			return cmdutil.Usagef("--var %s: drill %s has no such variable (it has %s)", name, d.Name, strings.Join(names, ", "))
		}
	}
	return nil
}

// NewDeps builds what drill steps and rollbacks act on from the resolved
// context (drill run and drill recover share it).
func NewDeps(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env, keyFile string) (*runtime.Deps, error) {
	actor, err := env.Actor(ctx)
	if err != nil {
		return nil, err
	}
	// Every lever kind the context has, built now: a setting one cannot
	// use stops the drill before it starts.
	for _, spec := range env.Kinds.Specs() {
		if _, err := env.Kinds.Kind(spec.Name); err != nil {
			return nil, err
		}
	}
	deps := &runtime.Deps{
		Clock: f.Clock, ContextName: env.Name, StoreDescription: env.Store.Describe(), Actor: actor,
		Levers: env.Levers(), KnownDependencies: env.Context.KnownDependencies(), Audit: env.Audit(),
		Minter: &lazyMinter{build: func(ctx context.Context) (*chaos.Minter, error) {
			src, err := env.KeySource(ctx, keyFile)
			if err != nil {
				return nil, err
			}
			targets, err := env.ChaosTargets()
			if err != nil {
				return nil, err
			}
			return chaos.NewMinter(src, chaos.MinterOptions{Clock: f.Clock, Targets: targets})
		}},
		HTTP:      runtime.NewHTTPClient(),
		LookupEnv: f.Environ.Lookup, Environ: f.Environ.List(),
	}
	// A context naming two sources gets no name here; each read reports it.
	choice, _ := gaugeenv.Choice(env, "")
	deps.Gauges = &runtime.MetricsGauges{Name: choice.Description, Hint: choice.Hint(),
		New: func(ctx context.Context) (metrics.GaugeSource, error) {
			return gaugeenv.Source(ctx, env, "")
		}}
	deps.Alarms = metrics.NewAlarmSource(gaugeenv.Config(env, ""))
	return deps, nil
}

// lazyMinter resolves the context's chaos key on first use, so drills
// without chaos.sign run on contexts that have no key configured.
type lazyMinter struct {
	build func(context.Context) (*chaos.Minter, error)
	once  sync.Once
	m     *chaos.Minter
	err   error
}

func (l *lazyMinter) Mint(ctx context.Context, req chaos.MintRequest) (*chaos.Minted, error) {
	l.once.Do(func() { l.m, l.err = l.build(ctx) })
	if l.err != nil {
		return nil, l.err
	}
	return l.m.Mint(ctx, req)
}

// printSummary prints the verdict on stdout, and every rollback that did
// not simply succeed.
func printSummary(f *cmdenv.Factory, j *drill.Journal) {
	out := f.IOStreams.Out
	if f.IOStreams.ColorEnabled() { // Summary renders its values itself
		fmt.Fprintln(textsafe.Raw(out), runner.Summary(j, true))
	} else {
		fmt.Fprintln(out, runner.Summary(j, false))
	}
	for _, rb := range j.Rollbacks {
		PrintRollbackLeft(f, out, rb, rb.Status+", step "+rb.Step)
	}
}

// PrintRollbackLeft prints, for drill run and drill recover, the line of a
// rollback that did not succeed (one that did prints nothing): NOT
// RESTORED, with its error (for an outcome unknown, the get command that
// tells) and when its lever lapses. which names the rollback in the
// parentheses after its subject.
func PrintRollbackLeft(f *cmdenv.Factory, w io.Writer, rb drill.RollbackRecord, which string) {
	if rb.Status == drill.StatusOK {
		return
	}
	lapse := "it does not lapse on its own: restore it by hand"
	if rb.ExpiresAt != nil {
		lapse = "it lapses on its own at " + cmdutil.FormatTime(*rb.ExpiresAt, f.Clock.Now(), f.IOStreams.IsStdoutTTY())
	}
	fmt.Fprintf(w, "  NOT RESTORED: %s (%s): %s; %s\n", textsafe.Line(rb.Subject), textsafe.Line(which), textsafe.Line(rb.Error), lapse)
}
