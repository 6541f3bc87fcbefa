package cmdenv

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Factory holds a command's dependencies. Everything that touches the disk or
// the network is a function called on first use, so --help, version and
// completion never load config or credentials. The production wiring lives in
// internal/cmd/factory; tests build a Factory with fakes.
type Factory struct {
	IOStreams *iostreams.IOStreams
	Clock     clock.Clock
	Prompter  cmdutil.Prompter

	// ContextName is the global --context flag (or $KOSHACTL_CONTEXT); empty
	// means the config's current context. Read it through
	// [Factory.SelectContext], which also says where it came from.
	ContextName string
	// ContextFlagSet is true when ContextName was given as --context (it
	// came from $KOSHACTL_CONTEXT otherwise).
	ContextFlagSet bool
	// Debug is the global --debug flag: AWS clients log each operation to
	// stderr.
	Debug bool
	// RequestTimeout is the global --request-timeout flag: it bounds one
	// AWS request, over the context's request-timeout. Zero: the context's,
	// else the default (10s).
	RequestTimeout time.Duration
	// Environ is the environment commands read; nil is the process's.
	Environ cmdutil.Environ

	// Config loads the config file (cached after the first call).
	Config func() (*config.File, error)
	// Env resolves the selected context into live dependencies.
	Env func(ctx context.Context) (*Env, error)
	// OnRun, when set, is called as a command's own code starts (its
	// arguments and flags parsed), unless the command is marked
	// [NoInterruptHandling]. main installs its SIGINT/SIGTERM handling there:
	// a process that only parses or prints (help, a usage error, version)
	// does not pay for it (a signal handler costs a locked OS thread and two
	// round trips to it, a tenth of koshactl version's time).
	OnRun func()

	// What the program links beyond the common commands (docs/benchmarks/startup.md:
	// koshactl is a front that hands what it does not link to koshactl-full).

	// Groups are top-level commands beyond the common ones: the full
	// program's mcp, dashboard and sandbox.
	Groups []Group
	// OpenLocal opens a local context's embedded store; nil in a program
	// that does not link it (the front).
	OpenLocal func(ctx context.Context, path string) (store.Store, error)
	// HandOff, when set, runs the whole invocation (args) in the full
	// program instead of this one, and returns only when it cannot: the
	// front's, for what it does not link (a group above, --jq, a local
	// context's store, the whole tree).
	HandOff func(args []string) error
}

// Group is one top-level command a program adds to the tree: its name and
// aliases, exactly as the command it builds has them, and how to build it.
type Group struct {
	Names []string
	Build func(*Factory) *cobra.Command
}

// Env is a resolved context: its settings, the clients built from them, and
// the domain services a command acts through (Levers and its Guard,
// Approvals, Audit, KeySource, GaugeSource: services.go), each built once.
// It is not a component's dependency bag: a command reads it and builds the
// Deps of the component it runs from it (sandbox.Deps, tui.Deps,
// drill.Deps), so the components never see a context or a config file.
type Env struct {
	Name    string
	Context *config.Context
	Store   store.Store
	// Actor names who is acting, for audit: the AWS caller identity on AWS
	// contexts, user@host on local ones. It is Identity's Actor when
	// Identity is set.
	Actor func(ctx context.Context) (string, error)
	// Identity is who is acting and how koshactl knows (STS-verified or
	// asserted). Nil in tests that only fake Actor: records then carry no
	// actor_source.
	Identity func(ctx context.Context) (audit.Identity, error)
	// AWSConfig returns the context's AWS configuration (AWS contexts only;
	// local contexts return an error that says so).
	AWSConfig func(ctx context.Context) (aws.Config, error)
	// StateDir is where local state (embedded store, local chaos key) lives.
	StateDir string
	// Environ is the environment the context was resolved in (the
	// Factory's); nil is the process's.
	Environ cmdutil.Environ

	// Clock is the time source of the services the Env hands out
	// (services.go); the factory's clock.
	Clock clock.Clock

	// Notifier announces the context's changes to its notification sinks
	// (config notify:). Nil announces nothing (tests that build an Env).
	Notifier *notify.Dispatcher

	// Kinds are the context's lever kinds (internal/lever/builtin's).
	Kinds *lever.Registry

	// Impact tells what a change forcing or clearing dependencies does to
	// the platform's tools, with the call rates of the context's metrics
	// source (gaugeenv.Assessor); the lever service carries it into every
	// plan, report, request and record. Nil tells none (tests that build
	// an Env). A command's --metrics-url replaces it with
	// [Env.MeasureImpactWith].
	Impact lever.Assessor

	mu         sync.Mutex
	levers     *lever.Service
	audit      *audit.Log
	keySources map[string]*keys.Chosen
}

// CheckNoNotify refuses --no-notify on a context that does not allow it;
// commands call it before they change anything.
func CheckNoNotify(env *Env, noNotify bool) error {
	if noNotify && !env.Context.AllowNoNotify {
		return cmdutil.Usagef("--no-notify: context %q does not allow skipping its notification; drop the flag (or set allow-no-notify: true in the context)", env.Name)
	}
	return nil
}

// Notify announces one change (after its audit records are written) to the
// context's sinks, unless noNotify (checked by CheckNoNotify). It never
// fails the change: failures are reported on stderr and in the audit log
// by the notifier.
func Notify(ctx context.Context, env *Env, noNotify bool, ev notify.Event) notify.Report {
	if noNotify || env.Notifier == nil {
		return notify.Report{}
	}
	return env.Notifier.Notify(ctx, ev)
}

// Announce sends a lever report's announcement (none: nothing written, a
// dry run, --no-notify), once the command has shown the report.
func Announce(ctx context.Context, env *Env, ev *notify.Event) {
	if ev != nil {
		Notify(ctx, env, false, *ev)
	}
}

// AuditLog returns the context's audit log. Records whose actor is the
// context's identity carry how it was established (actor_source).
func (e *Env) AuditLog(clk clock.Clock) *audit.Log {
	l := audit.NewLog(e.Store, clk, e.Name)
	if e.Identity == nil {
		return l
	}
	return l.Attest(func(ctx context.Context, actor string) audit.ActorSource {
		id, err := e.Identity(ctx)
		if err != nil || id.Actor != actor {
			return ""
		}
		return id.Source
	})
}

// Describe says which context and store commands acted on.
func (e *Env) Describe() string {
	return fmt.Sprintf("context %q (%s)", e.Name, e.Store.Describe())
}

// PrintActedOn writes the line every mutating command ends with on stderr:
// which context and store it acted on, or would have on a dry run. It goes to
// stderr in every output mode, so -o json stays parseable.
func PrintActedOn(w io.Writer, env *Env, dryRun bool) {
	if dryRun {
		fmt.Fprintf(w, "dry run, nothing written; would act on %s\n", env.Describe())
		return
	}
	fmt.Fprintf(w, "acted on %s\n", env.Describe())
}

// ContextSource says where the name of the context a command acts on came
// from; its value is the JSON form (config current-context -o json).
type ContextSource string

// The sources of the selected context, in the order they win.
const (
	ContextFromFlag    ContextSource = "flag"    // --context
	ContextFromEnv     ContextSource = "env"     // $KOSHACTL_CONTEXT
	ContextFromFile    ContextSource = "file"    // the config file's current-context
	ContextFromDefault ContextSource = "default" // no current-context: the built-in local context
)

// Describe reads "$KOSHACTL_CONTEXT", "--context", "current-context in
// <path>" or "the built-in default: no current-context is set".
func (s ContextSource) Describe(file *config.File) string {
	switch s {
	case ContextFromFlag:
		return "--context"
	case ContextFromEnv:
		return "$KOSHACTL_CONTEXT"
	case ContextFromFile:
		return "current-context in " + file.Path()
	case ContextFromDefault:
		return "the built-in default: no current-context is set"
	}
	return string(s)
}

// SelectContext is the one rule for which context a command acts on: the
// --context flag, else $KOSHACTL_CONTEXT, else the config file's
// current-context, else the built-in local context. It returns the name and
// where it came from.
func (f *Factory) SelectContext(file *config.File) (string, ContextSource) {
	switch {
	case f.ContextName != "" && f.ContextFlagSet:
		return f.ContextName, ContextFromFlag
	case f.ContextName != "":
		return f.ContextName, ContextFromEnv
	case file.CurrentContext != "":
		return file.Current(), ContextFromFile
	}
	return file.Current(), ContextFromDefault
}

// SelectedContext is the context a command acts on ([Factory.SelectContext])
// and its name, read from the config file alone (no store, no credentials):
// the config's error, or the context's ([config.File.Context]).
func (f *Factory) SelectedContext() (string, *config.Context, error) {
	file, err := f.Config()
	if err != nil {
		return "", nil, err
	}
	name, _ := f.SelectContext(file)
	c, err := file.Context(name)
	return name, c, err
}

// Envelope is what every command's JSON result starts with: its kind, and
// the context and store it acted on.
type Envelope struct {
	Kind    string `json:"kind"`
	Context string `json:"context"`
	Store   string `json:"store"`
}

// Envelope is the envelope of a result of kind on e.
func (e *Env) Envelope(kind string) Envelope {
	return Envelope{Kind: kind, Context: e.Name, Store: e.Store.Describe()}
}
