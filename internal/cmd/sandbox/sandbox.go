// Package sandbox implements `koshactl sandbox`: run the local gateway fleet
// (internal/dataplane/sandbox) on the current context's store, and its subcommands
// `sandbox status` (a live text view of the fleet's breakers) and `sandbox
// config` (print the effective configuration as a file to start from).
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	configcmd "github.com/kosha-platform/koshactl/internal/cmd/sandbox/config"
	"github.com/kosha-platform/koshactl/internal/cmd/sandbox/status"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	sbx "github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// ShutdownTimeout bounds the graceful shutdown after SIGINT or SIGTERM.
const ShutdownTimeout = 10 * time.Second

// Options are the parsed flags.
type Options struct {
	Instances int
	// IgnoreOverrides are the instances of --ignore-overrides-instance.
	IgnoreOverrides []int
	RPS             float64
	Clients         int
	Listen          string
	// AllowedHosts are extra Host names /mcp and /admin accept.
	AllowedHosts []string
	Profile      string
	Chaos        bool
	ConfigFile   string
	EMF          string
	TimeScale    float64
	KeyFile      string
	AddrFile     string
	LogLevel     string
	LogFormat    string

	// Changed records which flags were given, so they override the file.
	Changed map[string]bool
}

// NewCmd builds the command group; runF replaces the run function in tests.
func NewCmd(f *cmdenv.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local gateway fleet that obeys the LLD (breakers, overrides, rate limits, chaos)",
		Long: heredoc.Doc(`
			Run N gateway instances in one process (gw-1..gw-N, default 4), each with its own
			circuit breakers, retry budgets, bulkheads and in-flight limit, in front of simulated
			downstreams (core-api, screening-sim, openai, postgres). They read breaker overrides
			and rate-limit buckets from the current context's store, so every koshactl command
			acts on them: force-open a breaker and watch every instance report forced_open within
			the override cache period.

			One address serves everything: POST /mcp (JSON-RPC tools/call with a bearer token),
			GET /metrics (Prometheus: kosha_breaker_state{dependency,instance} and call outcomes),
			GET /status, GET /healthz and /admin/chaos (screening-sim's own fault knobs).
			Signed X-Kosha-Chaos headers are honored only with --chaos, for the operator role.

			--time-scale N runs every LLD duration N times faster (override cache, open
			durations, attempt caps, budgets, latency) for quick drills and CI. A config file
			(see "koshactl sandbox config") sets principals, downstream profiles, the tool mix
			and every resilience setting; flags override it. Ctrl-C (or SIGTERM) drains
			in-flight requests and stops.
		`),
		Example: heredoc.Doc(`
			koshactl sandbox
			koshactl sandbox --profile flaky --rps 8 --chaos
			koshactl sandbox --instances 64 --listen 127.0.0.1:0 --addr-file sandbox.url
			koshactl sandbox --config sandbox.yaml --emf breaker-state.emf.jsonl
			koshactl sandbox status --watch
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.Changed = map[string]bool{}
			c.Flags().Visit(func(fl *pflag.Flag) { opts.Changed[fl.Name] = true })
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&opts.Instances, "instances", "n", sbx.DefaultInstances, "gateway instances (gw-1..gw-N)")
	fl.Float64Var(&opts.RPS, "rps", 0, "synthetic traffic: tool calls per second (0: none)")
	fl.IntVar(&opts.Clients, "clients", 0, "synthetic traffic: clients sharing the rate (0: enough that the rate limit rarely bites)")
	fl.StringVar(&opts.Listen, "listen", sbx.DefaultListen, "address for every endpoint (port 0 picks a free one)")
	fl.StringArrayVar(&opts.AllowedHosts, "allowed-host", nil, "also accept this Host name on /mcp and /admin (repeatable; localhost, 127.0.0.1, [::1] and the listen host always are)")
	fl.StringVar(&opts.Profile, "profile", sbx.ProfileHealthy, "downstream behavior: "+strings.Join(sbx.ProfileNames(), "|"))
	fl.BoolVar(&opts.Chaos, "chaos", false, "honor signed X-Kosha-Chaos headers from operators (CHAOS_ENABLED)")
	fl.StringVar(&opts.ConfigFile, "config", "", "YAML configuration file (see koshactl sandbox config)")
	fl.StringVar(&opts.EMF, "emf", "", "also append the breaker_state gauges as CloudWatch EMF JSON lines to this file")
	fl.Float64Var(&opts.TimeScale, "time-scale", 1, "run every LLD duration this many times faster (1: the LLD's time)")
	fl.StringVar(&opts.AddrFile, "addr-file", "", "write the base URL to this file once serving (for scripts)")
	fl.StringVar(&opts.LogLevel, "log-level", "info", "log level on stderr: debug|info|warn|error")
	fl.StringVar(&opts.LogFormat, "log-format", "text", "log format on stderr: text|json")
	fl.IntSliceVar(&opts.IgnoreOverrides, "ignore-overrides-instance", nil, "test knob: instance N (gw-N) never reads breaker overrides, so --wait and breaker status show \"not obeyed\" (repeatable)")
	cmdenv.AddKeyFileFlag(cmd, &opts.KeyFile)
	_ = cmd.RegisterFlagCompletionFunc("profile", cobra.FixedCompletions(sbx.ProfileNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
	cmd.AddCommand(status.NewCmd(f), configcmd.NewCmd(f))
	return cmd
}

// Resolve builds the sandbox configuration: the defaults, then the file,
// then the flags given.
func (o *Options) Resolve() (sbx.Config, error) {
	cfg := sbx.DefaultConfig()
	profile := "" // before the file's downstream settings, which refine it
	if o.Changed["profile"] {
		profile = o.Profile
	}
	if err := cfg.LoadFile(o.ConfigFile, profile); err != nil {
		return cfg, cmdutil.UsageError(err)
	}
	set := func(name string, apply func()) {
		if o.Changed[name] {
			apply()
		}
	}
	set("instances", func() { cfg.Instances = o.Instances })
	set("rps", func() { cfg.Traffic.RPS = o.RPS })
	set("clients", func() { cfg.Traffic.Clients = o.Clients })
	set("listen", func() { cfg.Listen = o.Listen })
	set("allowed-host", func() { cfg.AllowedHosts = o.AllowedHosts })
	set("chaos", func() { cfg.ChaosEnabled = o.Chaos })
	set("time-scale", func() { cfg.TimeScale = o.TimeScale })
	set("ignore-overrides-instance", func() { cfg.IgnoreOverrides = o.IgnoreOverrides })
	return cfg, nil
}

// Run runs the sandbox until ctx ends or SIGINT/SIGTERM arrives.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	logger, logOut, err := newLogger(f.IOStreams.ErrOut, opts)
	if err != nil {
		return err
	}
	cfg, err := opts.Resolve()
	if err != nil {
		return err
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	// The context's limits, so koshactl ratelimit computes what the sandbox enforces.
	b, err := cmdenv.Kind[*ratelimit.Buckets](env, ratelimit.Spec.Name)
	if err != nil {
		return err
	}
	cfg.RateLimit = b.Limits()
	if cfg.ChaosTargets == nil {
		if cfg.ChaosTargets, err = env.ChaosTargets(); err != nil {
			return err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cmdutil.UsageError(err)
	}
	// The fleet runs on the wall clock whatever the factory's clock: its
	// breakers, deadlines and timers are real time.
	deps := sbx.Deps{Store: env.Store, Clock: clock.Real{}, Logger: logger, ContextName: env.Name,
		Audit: audit.NewDataPlaneLog(env.Store, clock.Real{}, env.Name)}
	keyDesc := ""
	if cfg.ChaosEnabled {
		src, err := env.KeySource(ctx, opts.KeyFile)
		if err != nil {
			return err
		}
		if _, err := src.Current(ctx); err != nil { // fail at start, not on the first header
			return fmt.Errorf("read chaos key from %s: %w", src.Describe(), err)
		}
		deps.Keys, keyDesc = src, src.Describe()
	}
	// Refused before anything starts: a link, a directory, a block device.
	if opts.AddrFile != "" {
		if err := fsutil.CheckOutput(opts.AddrFile, true); err != nil {
			return cmdutil.Usagef("--addr-file: %v; nothing was started", err)
		}
	}
	emfPath := cmp.Or(opts.EMF, cfg.EMF.File)
	if emfPath != "" {
		// Appended to without following a link; a pipe (with its reader
		// running) or a device is written in place, and the open never
		// blocks. Closing it ends a write a stalled reader holds up.
		ef, err := fsutil.OpenAppend(ctx, emfPath, 0o600)
		if err != nil {
			return cmdutil.Usagef("open EMF file: %v; nothing was started", err)
		}
		defer ef.Close()
		deps.EMF = ef
	}
	srv, err := sbx.New(cfg, deps)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) {
			hint = " (is another sandbox running? stop it, or use --listen 127.0.0.1:0 for a free port)"
		}
		return cmdutil.UsageError(fmt.Errorf("listen on %s: %w%s", cfg.Listen, err, hint))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Start(ctx, ln); err != nil {
		_ = ln.Close()
		return err
	}
	started := time.Now()
	url := srv.URL()
	printBanner(f.IOStreams.Out, srv, env.Name, env.Store.Describe(), keyDesc, emfPath, ln.Addr())
	if opts.AddrFile != "" {
		written, err := writeAddrFile(ctx, opts.AddrFile, url)
		if err != nil {
			_ = shutdown(srv)
			return err
		}
		defer removeIfSame(opts.AddrFile, written)
	}
	<-ctx.Done()
	fmt.Fprintln(logOut, "koshactl sandbox: stopping (draining in-flight requests)")
	if err := shutdown(srv); err != nil {
		return err
	}
	var served uint64
	for _, in := range srv.Fleet().Instances() {
		served += in.Served()
	}
	fmt.Fprintf(f.IOStreams.Out, "koshactl sandbox: stopped after %s; %d tool calls served\n",
		human.Age(time.Since(started)), served)
	return nil
}

func shutdown(srv *sbx.Server) error {
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stop sandbox: %w", err)
	}
	return nil
}

// writeAddrFile writes url to path under the output policy (a new file
// replaces a regular one atomically, so a script polling for the file never
// reads half of it; a pipe or device is written in place; a link is
// refused). It returns the file it created, nil when it wrote in place.
func writeAddrFile(ctx context.Context, path, url string) (os.FileInfo, error) {
	if err := fsutil.WriteFile(ctx, path, []byte(url+"\n"), 0o600); err != nil {
		return nil, cmdutil.Usagef("write --addr-file: %v", err)
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil //nolint:nilerr // written in place, or already gone: nothing of ours to remove
	}
	return fi, nil
}

// removeIfSame removes path when it is still the file written (never a
// pipe or device written in place, nor a file put there since).
func removeIfSame(path string, written os.FileInfo) {
	if written == nil {
		return
	}
	if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, written) {
		_ = os.Remove(path)
	}
}

func printBanner(w io.Writer, srv *sbx.Server, ctxName, storeDesc, keyDesc, emfPath string, addr net.Addr) {
	cfg := srv.Config()
	n := len(srv.Fleet().Instances())
	url := srv.URL()
	fmt.Fprintf(w, "koshactl sandbox: %d gateway instances (%s..%s) serving on %s\n", n, sbx.InstanceName(1), sbx.InstanceName(n), url)
	timing := "LLD time"
	if cfg.TimeScale != 1 {
		timing = fmt.Sprintf("time x%g", cfg.TimeScale)
	}
	chaosState := "chaos headers ignored (start with --chaos to honor them)"
	if cfg.ChaosEnabled {
		chaosState = "chaos enabled (key: " + keyDesc + ")"
	}
	traffic := "no synthetic traffic"
	if st := srv.Status(); st.Traffic.RPS > 0 {
		traffic = fmt.Sprintf("traffic %g rps from %d clients", st.Traffic.RPS, st.Traffic.Clients)
	}
	fmt.Fprintf(w, "  context %s (%s), profile %s, %s, override cache %s\n", ctxName, storeDesc, cfg.Profile, timing, cfg.OverrideRefresh)
	fmt.Fprintf(w, "  %s; %s\n", chaosState, traffic)
	fmt.Fprintf(w, "  tool calls   POST %s%s  (JSON-RPC tools/call, Authorization: Bearer <token>)\n", url, sbx.PathMCP)
	if slices.Equal(cfg.Principals, sbx.DefaultPrincipals()) {
		fmt.Fprintf(w, "               default tokens: agent-token (agent-1, agent), operator-token (ops-1, operator)\n")
	} else {
		fmt.Fprintf(w, "               %d principals from the config file\n", len(cfg.Principals))
	}
	fmt.Fprintf(w, "  metrics      %s%s\n", url, sbx.PathMetrics)
	fmt.Fprintf(w, "  status       %s%s  (koshactl sandbox status --watch --url %s)\n", url, sbx.PathStatus, url)
	fmt.Fprintf(w, "  chaos knobs  %s%s\n", url, sbx.PathAdminChaos)
	if emfPath != "" {
		fmt.Fprintf(w, "  EMF lines    %s\n", emfPath)
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(w, "  warning: listening beyond loopback; anyone who can reach %s can call tools with the configured tokens\n", addr)
	}
	fmt.Fprintln(w, "Press Ctrl-C to stop.")
}

// syncWriter serializes writes from the logger and the command, so a
// buffer-backed stderr (tests) is never written concurrently.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p under the lock.
func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func newLogger(w io.Writer, opts *Options) (*slog.Logger, io.Writer, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(opts.LogLevel)); err != nil {
		return nil, nil, cmdutil.Usagef("--log-level %q: use debug, info, warn or error", opts.LogLevel)
	}
	sw := &syncWriter{w: w}
	ho := &slog.HandlerOptions{Level: level}
	switch opts.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(sw, ho)), sw, nil
	case "json":
		return slog.New(slog.NewJSONHandler(sw, ho)), sw, nil
	}
	return nil, nil, cmdutil.Usagef("--log-format %q: use text or json", opts.LogFormat)
}
