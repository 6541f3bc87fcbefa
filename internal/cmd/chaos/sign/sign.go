package sign

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
)

// Output formats of sign, besides json and yaml.
const (
	// FormatHeader prints "X-Kosha-Chaos: <value>" (the default), ready for
	// curl -H "$(koshactl chaos sign ...)".
	FormatHeader = "header"
	// FormatValue prints the bare header value.
	FormatValue = "value"
	// FormatCurl prints the curl argument -H 'X-Kosha-Chaos: <value>'.
	FormatCurl = "curl"
)

// Formats lists every -o value sign accepts.
func Formats() []string {
	return []string{FormatHeader, FormatValue, FormatCurl, cmdutil.FormatJSON, cmdutil.FormatYAML}
}

// AuditAction is the audit record action of a mint.
const AuditAction = "chaos.sign"

// Options are the parsed flags.
type Options struct {
	Target string
	Fault  string
	Ms     int
	// MsSet is true when --ms was given (it is required for latency and
	// refused for the other faults).
	MsSet   bool
	P       chaos.Prob
	TTL     time.Duration
	KeyFile string
	Reason  string
	Output  string
}

// NewCmd builds the command. runF, when non-nil, replaces the run function
// (tests use it to capture parsed options).
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{P: chaos.ProbOne}
	cmd := &cobra.Command{
		Use:   "sign --target T --fault F [--ms N] [--p P] [--ttl DUR]",
		Short: "Mint a signed, expiring X-Kosha-Chaos fault-injection header",
		Long: heredoc.Doc(`
			Mint an X-Kosha-Chaos header asking the data plane to inject a fault into calls
			to one downstream, with probability --p, until it expires. Every request that
			carries the header during its lifetime is affected; the data plane honors it
			only with CHAOS_ENABLED=true and only for callers with the operator role.

			Faults: latency (adds --ms milliseconds, required, 1..60000), error (503),
			timeout (hangs past the attempt cap), reset (connection error).

			The header lives --ttl (default 5m). The 15-minute cap is hard: a longer ttl
			is an error, never shortened silently. --p is a decimal in (0, 1] with at
			most four decimals (default 1).

			The header is signed with the context's current chaos key (see koshactl chaos
			--help for where keys come from) and every mint is audited (action chaos.sign,
			subject chaos#<jti>: who, the fields, iat, exp and jti, never the signature). If
			the audit record cannot be written the header is not printed (exit 8).

			While the fleet is frozen (koshactl freeze) nothing is minted: exit 7, naming who
			froze it, why, the reference and until when. The freeze item is read first, on
			every context; if it cannot be read nothing is minted either (exit 5): a fault is
			not injected unchecked. The header carries iat, when it was issued: the data plane
			never honours a header issued before the end of a freeze (docs/contracts/freeze.md).
		`),
		Example: heredoc.Doc(`
			# 250 ms of latency on half the calls to core-api, for 5 minutes
			curl -H "$(koshactl chaos sign --target core-api --fault latency --ms 250 --p 0.5)" https://gateway.example/v1/screen

			# every call to openai fails with 503 for 10 minutes; just the value
			koshactl chaos sign --target openai --fault error --ttl 10m -o value

			# in CI, with a key file instead of the context's key source
			koshactl chaos sign --target postgres --fault reset --key-file ./chaos.key -o json
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.MsSet = c.Flags().Changed("ms")
			if !slices.Contains(Formats(), opts.Output) {
				return cmdutil.Usagef("unknown output format %q: use one of %s", opts.Output, strings.Join(Formats(), ", "))
			}
			if _, err := opts.Request(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Target, "target", "", "downstream to inject into (one of the context's chaos targets; default core-api, screening-sim, openai, postgres)")
	fl.StringVar(&opts.Fault, "fault", "", "fault to inject: latency, error, timeout or reset")
	fl.IntVar(&opts.Ms, "ms", 0, "added latency in milliseconds, 1..60000 (latency only, required for it)")
	fl.Var(&opts.P, "p", "probability that a call is affected, in (0, 1], at most 4 decimals")
	opts.TTL = chaos.DefaultTTL
	fl.Var(human.DurationFlag{D: &opts.TTL}, "ttl", "how long the header lives, at most "+human.Duration(chaos.MaxTTL))
	fl.StringVarP(&opts.Reason, "reason", "r", "", "why, recorded in the audit log (optional)")
	fl.StringVarP(&opts.Output, "output", "o", FormatHeader, "output format: "+strings.Join(Formats(), "|"))
	cmdenv.AddKeyFileFlag(cmd, &opts.KeyFile)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(Formats(), cobra.ShellCompDirectiveNoFileComp))
	faults := make([]string, 0, 4)
	for _, ft := range chaos.Faults() {
		faults = append(faults, ft.String()+"\t"+ft.Describe())
	}
	_ = cmd.RegisterFlagCompletionFunc("fault", cobra.FixedCompletions(faults, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("target", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return completeTargets(f), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// completeTargets offers the selected context's targets, read from the
// config file only (no store, no credentials).
func completeTargets(f *cmdenv.Factory) []string {
	if f.Config == nil {
		return chaos.TargetNames(nil)
	}
	_, c, err := f.SelectedContext()
	if err != nil || len(c.Chaos.Targets) == 0 {
		return chaos.TargetNames(nil)
	}
	return append([]string(nil), c.Chaos.Targets...)
}

// Request checks the flags that need no context and returns the mint
// request they describe. Every problem is a usage error (exit 2).
func (o *Options) Request() (chaos.MintRequest, error) {
	var req chaos.MintRequest
	if o.Target == "" {
		return req, cmdutil.Usagef("--target is required: the downstream to inject into (e.g. core-api)")
	}
	t, err := chaos.ParseTarget(o.Target)
	if err != nil {
		mean := ""
		if s := chaos.ClosestTarget(o.Target, nil); s != "" {
			mean = fmt.Sprintf(" (did you mean %s?)", s)
		}
		return req, cmdutil.Usagef("--target %q is not a target name: %s%s", o.Target, problem(err), mean)
	}
	if o.Fault == "" {
		return req, cmdutil.Usagef("--fault is required: one of latency, error, timeout, reset")
	}
	fault, err := chaos.ParseFault(o.Fault)
	if err != nil {
		return req, cmdutil.Usagef("--fault %s", problem(err))
	}
	switch {
	case fault == chaos.FaultLatency && !o.MsSet:
		return req, cmdutil.Usagef("--fault latency needs --ms N: the added latency in milliseconds (%d..%d)", chaos.MinMs, chaos.MaxMs)
	case fault == chaos.FaultLatency && (o.Ms < chaos.MinMs || o.Ms > chaos.MaxMs):
		return req, cmdutil.Usagef("--ms %d is outside %d..%d milliseconds", o.Ms, chaos.MinMs, chaos.MaxMs)
	case fault != chaos.FaultLatency && o.MsSet:
		return req, cmdutil.Usagef("--ms applies to --fault latency only; %s takes no duration", fault)
	}
	if !o.P.Valid() {
		return req, cmdutil.Usagef("--p %s is not in (0, 1]", o.P)
	}
	switch {
	case o.TTL > chaos.MaxTTL:
		return req, fmt.Errorf("--ttl %s: %w: it exceeds the %s cap, which is hard (the data plane refuses headers that live longer); mint a new header when this one expires",
			human.Duration(o.TTL), chaos.ErrTTL, human.Duration(chaos.MaxTTL))
	case o.TTL < chaos.MinTTL:
		return req, fmt.Errorf("--ttl %s: %w: the minimum is %s", human.Duration(o.TTL), chaos.ErrTTL, human.Duration(chaos.MinTTL))
	}
	if err := audit.ValidateReason(o.Reason); err != nil {
		return req, fmt.Errorf("--%w", err) // the flag's name: "--reason is 612 characters: …"
	}
	return chaos.MintRequest{Target: t, Fault: fault, Ms: o.Ms, P: o.P, TTL: o.TTL}, nil
}

// problem returns a FieldError's problem without the "chaos header field"
// prefix, which reads oddly about a flag.
func problem(err error) string {
	var fe *chaos.FieldError
	if errors.As(err, &fe) {
		return fe.Problem
	}
	return err.Error()
}

// Result is the JSON (and YAML) output of sign.
type Result struct {
	Kind      string `json:"kind"`
	Context   string `json:"context"`
	KeySource string `json:"key_source"`
	// Header is the HTTP header name, Value what it carries.
	Header string `json:"header"`
	Value  string `json:"value"`
	// Fields spells out the signed fields (not the signature).
	Fields    chaos.Header `json:"fields"`
	IssuedAt  time.Time    `json:"issued_at"`
	ExpiresAt time.Time    `json:"expires_at"`
	TTL       string       `json:"ttl"`
	AuditID   string       `json:"audit_id"`
}

// Run mints the header, audits the mint, and only then prints it.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	req, err := opts.Request()
	if err != nil {
		return err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	targets, err := env.ChaosTargets()
	if err != nil {
		return err
	}
	if !slices.Contains(chaos.TargetNames(targets), string(req.Target)) {
		mean := ""
		if s := chaos.ClosestTarget(string(req.Target), targets); s != "" {
			mean = fmt.Sprintf(" (did you mean %s?)", s)
		}
		return cmdutil.Usagef("--target %s is not one of context %q's chaos targets (%s)%s: pick one of those, or allow it with koshactl config set-context %s --chaos-targets",
			req.Target, env.Name, chaos.JoinTargets(targets), mean, env.Name)
	}
	src, err := env.KeySource(ctx, opts.KeyFile)
	if err != nil {
		return err
	}
	if err := awaitFreeze(ctx, f, env); err != nil {
		return err
	}
	actor, err := env.Actor(ctx)
	if err != nil {
		return err
	}
	minter, err := chaos.NewMinter(src, chaos.MinterOptions{Clock: f.Clock, Targets: targets})
	if err != nil {
		return err
	}
	m, err := minter.Mint(ctx, req)
	if err != nil {
		if errors.Is(err, chaos.ErrTargetNotAllowed) || errors.Is(err, chaos.ErrSyntax) {
			return cmdutil.UsageError(err)
		}
		return err
	}
	rec, err := env.Audit().Append(ctx, audit.Entry{
		Actor:   actor,
		Action:  AuditAction,
		Subject: "chaos#" + m.Header.JTI,
		Reason:  strings.TrimSpace(opts.Reason),
		After:   m.Record(),
	})
	if err != nil {
		// Printing a header whose mint is not on record would let an
		// unaudited fault be injected: the header is dropped.
		return fmt.Errorf("chaos header jti %s was signed but is not printed, because %w; a header must not be used unaudited: fix the store (%s) and sign again",
			m.Header.JTI, err, env.Store.Describe())
	}
	return printMinted(f, opts, env, src, m, rec)
}

// awaitFreeze reads the fleet's freeze (one GetItem) and applies
// freeze.CheckMint: refused while frozen (exit 7, naming the freeze); in the
// second a freeze ended, a wait for the next whole second, so the header's
// iat is not before the end. A freeze item that cannot be read mints
// nothing (fail closed): the store's error, exit 5 by default.
func awaitFreeze(ctx context.Context, f *cmdenv.Factory, env *cmdenv.Env) error {
	fr, err := freeze.Read(ctx, env.Store)
	if err != nil {
		return exitcode.Default(exitcode.Unavailable, fmt.Errorf("%w: no chaos header is minted that cannot be checked against the fleet's freeze; fix the store (%s) and sign again",
			err, env.Store.Describe()))
	}
	wait, err := freeze.CheckMint(fr, f.Clock.Now())
	if err != nil || wait <= 0 {
		return err
	}
	select {
	case <-clock.After(f.Clock, wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func printMinted(f *cmdenv.Factory, opts *Options, env *cmdenv.Env, src *keys.Chosen, m *chaos.Minted, rec audit.Record) error {
	ios := f.IOStreams
	kid := m.Header.KID
	if src.GeneratedLocal() {
		fmt.Fprintf(ios.ErrOut, "generated the local chaos key (kid %s): %s\n", kid, src.Describe())
	}
	var err error
	switch opts.Output {
	case FormatHeader:
		_, err = fmt.Fprintln(ios.Out, m.Line())
	case FormatValue:
		_, err = fmt.Fprintln(ios.Out, m.Value())
	case FormatCurl:
		_, err = fmt.Fprintln(ios.Out, m.CurlArgs())
	default:
		err = cmdutil.PrintStructured(ios.Out, opts.Output, Result{
			Kind: "ChaosHeader", Context: env.Name, KeySource: src.Describe(),
			Header: chaos.HeaderName, Value: m.Value(), Fields: m.Header,
			IssuedAt: m.IssuedAt.UTC(), ExpiresAt: m.Header.ExpTime().UTC(), TTL: m.TTL.String(), AuditID: rec.ID,
		})
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "signed chaos header (%s) with kid %s from %s (context %q); expires %s; audit record %s\n",
		m.Header.Summary(), kid, src.Describe(), env.Name,
		cmdutil.FormatTime(m.Header.ExpTime(), f.Clock.Now(), ios.IsStderrTTY()), rec.ID)
	return nil
}
