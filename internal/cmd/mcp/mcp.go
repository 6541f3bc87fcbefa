package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/build"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/mcpserver"
	"github.com/kosha-platform/koshactl/internal/mcpserver/sessions"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DefaultTokenEnv is the variable the HTTP transport's bearer token is read
// from when --token-file is not given.
const DefaultTokenEnv = "KOSHACTL_MCP_TOKEN" //nolint:gosec // G101: the name of the variable, not a credential

// Options are the parsed flags.
type Options struct {
	// Listen serves streamable HTTP on this loopback address instead of
	// stdio.
	Listen string
	// TokenEnv names the variable holding the bearer token; TokenFile a
	// file holding it instead.
	TokenEnv  string
	TokenFile string
	// AddrFile, when set, receives the URL served (for scripts and tests
	// on port 0).
	AddrFile string
	// MaxSessions and SessionIdle bound the HTTP transport's sessions
	// (zero: the context's mcp settings, else the defaults).
	MaxSessions int
	SessionIdle time.Duration
}

// NewCmd builds the command serving tools.
func NewCmd(f *cmdenv.Factory, tools Toolset) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the context to MCP clients: agents read the fleet and propose levers, people approve",
		Long: heredoc.Docf(`
			Serve the Model Context Protocol on stdin and stdout (the form MCP clients start
			themselves), or with --listen on a loopback address over streamable HTTP, where
			every request must carry Authorization: Bearer TOKEN (the token from $%s, or
			--token-file, a file only its owner may read; at least %d characters; never
			printed).

			The server acts on one context, like every command. Its read tools return what
			the commands print with -o json: breaker status (with the fleet's obedience),
			one override, the audit log, rate-limit buckets, pending change requests, drill
			validate and plan, a journal's game-day summary. Its proposal tools
			(propose_force_open, propose_clear, propose_ratelimit_reset, _drain, _set) make
			a change request whatever the table's policy says, announced like any request
			and audited with source mcp: a person applies it with koshactl request approve
			ID. No tool writes a lever, rotates a key or signs a chaos header. A context
			with mcp: {read-only: true} offers no proposal tool. A proposal identical to
			one of the same identity still pending returns that request (coalesced:
			nothing stored or announced again), and one identity's proposals make at most
			mcp.proposals-per-hour requests in any hour (default %d, counted in the
			table): the excess is refused with the time to retry.

			Every string a tool returns is escaped and cut to %d characters; each call is
			logged on stderr, counted, with its caller (the client's name and version, its
			session, the server's and the session's call count), the tool, its arguments'
			keys and types and the outcome.

			Over HTTP at most --max-sessions sessions are open at once (default %d; the
			context's mcp.max-sessions): a client asking for one more is refused (HTTP 503,
			a JSON-RPC error naming the cap), and a session no request used for
			--session-idle-timeout (default %s) is closed. Client configuration and the tool
			list: docs/mcp.md.
		`, DefaultTokenEnv, mcpserver.MinTokenLength, approval.DefaultProposalsPerHour, mcpserver.MaxString, sessions.DefaultMaxSessions,
			human.Duration(sessions.SessionIdleTimeout)),
		Example: heredoc.Doc(`
			koshactl mcp --context prod
			KOSHACTL_MCP_TOKEN=$(openssl rand -hex 32) koshactl mcp --listen 127.0.0.1:8788
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return Run(c.Context(), f, tools, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", "", "serve streamable HTTP on this loopback HOST:PORT instead of stdio")
	fl.StringVar(&opts.TokenEnv, "token-env", DefaultTokenEnv, "with --listen: the environment variable holding the bearer token")
	fl.StringVar(&opts.TokenFile, "token-file", "", "with --listen: read the bearer token from this file instead")
	fl.StringVar(&opts.AddrFile, "addr-file", "", "with --listen: write the URL served to this file once listening")
	fl.IntVar(&opts.MaxSessions, "max-sessions", 0, fmt.Sprintf("with --listen: most sessions open at once, 1 to %d (default: the context's mcp.max-sessions, else %d)",
		sessions.MaxMaxSessions, sessions.DefaultMaxSessions))
	fl.Var(human.DurationFlag{D: &opts.SessionIdle}, "session-idle-timeout", "with --listen: close a session idle this long, 1m to 24h (default: the context's mcp.session-idle-timeout, else "+
		human.Duration(sessions.SessionIdleTimeout)+")")
	return cmd
}

// Toolset is the server's tool table for env: the read tools, then the
// proposal tools unless the context is read-only for MCP. The command is
// given it by the command tree (internal/cmd/mcptools), so the server knows
// no command and no lever kind.
type Toolset func(f *cmdenv.Factory, env *cmdenv.Env) []mcpserver.Tool

// NewServer is the MCP server of env with tools, logging on log.
func NewServer(f *cmdenv.Factory, env *cmdenv.Env, tools Toolset, log io.Writer) *mcpserver.Server {
	return mcpserver.NewServer("koshactl", build.Get().Version, tools(f, env), log, f.Clock.Now)
}

// Run serves tools until the client closes stdin, or until interrupted.
func Run(ctx context.Context, f *cmdenv.Factory, tools Toolset, opts *Options) error {
	var token string
	if opts.Listen != "" {
		if err := mcpserver.CheckLoopback(opts.Listen); err != nil {
			return cmdutil.Usagef("--listen: %v", err)
		}
		var err error
		if token, err = readToken(f, opts); err != nil {
			return err
		}
	} else if opts.AddrFile != "" || opts.TokenFile != "" || opts.MaxSessions != 0 || opts.SessionIdle != 0 {
		return cmdutil.Usagef("--addr-file, --token-file, --max-sessions and --session-idle-timeout go with --listen: drop them to serve stdio")
	}
	if opts.MaxSessions < 0 {
		return cmdutil.Usagef("--max-sessions %d: give 1 to %d", opts.MaxSessions, sessions.MaxMaxSessions)
	}
	if err := sessions.Check(sessions.Limits{Max: opts.MaxSessions, Idle: opts.SessionIdle}); err != nil {
		return cmdutil.Usagef("--max-sessions, --session-idle-timeout: %v", err)
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := approval.CheckProposalsPerHour(env.Context.MCP.ProposalsPerHour); err != nil {
		return cmdutil.Usagef("context %q: mcp.proposals-per-hour: %v (koshactl config set-context %s --mcp-proposals-per-hour N)", env.Name, err, env.Name)
	}
	errOut := f.IOStreams.ErrOut
	srv := NewServer(f, env, tools, errOut)
	if opts.Listen == "" {
		fmt.Fprintf(errOut, "koshactl mcp: serving %s on stdio\n", textsafe.Line(env.Describe()))
		// The protocol's own bytes: JSON escapes every control, and
		// results are escaped already; the terminal backstop must not
		// rewrite a message.
		t := &sdk.IOTransport{Reader: io.NopCloser(f.IOStreams.In), Writer: nopWriteCloser{textsafe.Raw(f.IOStreams.Out)}}
		if err := srv.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("mcp over stdio: %w", err)
		}
		return nil
	}
	return serveHTTP(ctx, f, opts, srv, env, token)
}

func serveHTTP(ctx context.Context, f *cmdenv.Factory, opts *Options, srv *mcpserver.Server, env *cmdenv.Env, token string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", opts.Listen, err)
	}
	if err := boundLoopback(opts.Listen, ln.Addr()); err != nil {
		_ = ln.Close()
		return err
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	lim, err := sessionLimits(opts, env)
	if err != nil {
		_ = ln.Close()
		return err
	}
	mux := http.NewServeMux() // the MCP endpoint at /mcp and nothing else
	mux.Handle("/mcp", mcpserver.Handler(srv, token, lim))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if opts.AddrFile != "" {
		if err := fsutil.WriteFile(ctx, opts.AddrFile, []byte(url+"\n"), 0o600); err != nil {
			_ = ln.Close()
			return cmdutil.Usagef("--addr-file %s: %v", opts.AddrFile, err)
		}
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "koshactl mcp: serving %s at %s (bearer token required)\n", textsafe.Line(env.Describe()), url)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("mcp over http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// sessionLimits are the HTTP transport's: the flags, else the context's
// mcp settings (checked here: a hand-edited file is refused naming the
// key), else the defaults.
func sessionLimits(opts *Options, env *cmdenv.Env) (sessions.Limits, error) {
	lim := sessions.Limits{Max: env.Context.MCP.MaxSessions, Idle: env.Context.MCP.SessionIdleTimeout.Std()}
	if err := sessions.Check(lim); err != nil {
		return lim, cmdutil.Usagef("context %q: mcp.max-sessions or mcp.session-idle-timeout: %v (koshactl config set-context %s --mcp-max-sessions N --mcp-session-idle-timeout D)",
			env.Name, err, env.Name)
	}
	if opts.MaxSessions != 0 {
		lim.Max = opts.MaxSessions
	}
	if opts.SessionIdle != 0 {
		lim.Idle = opts.SessionIdle
	}
	return lim, nil
}

// readToken reads the bearer token from --token-file or the variable
// --token-env names; it never appears in a message.
func readToken(f *cmdenv.Factory, opts *Options) (string, error) {
	var token string
	if opts.TokenFile != "" {
		b, st, err := fsutil.ReadRegular(opts.TokenFile, 4096)
		if err != nil {
			return "", cmdutil.Usagef("--token-file %s: %v", opts.TokenFile, err)
		}
		// Whoever reads the token proposes levers as this server's
		// identity: like ssh with a private key, a token file other users
		// may read is refused (Windows has no such mode bits).
		if perm := st.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
			clear(b)
			return "", cmdutil.Usagef("--token-file %s can be read by other users (mode %04o): chmod 600 it", opts.TokenFile, perm)
		}
		token = strings.TrimRight(string(b), "\r\n")
	} else {
		token = f.Environ.Get(opts.TokenEnv)
		if token == "" {
			return "", cmdutil.Usagef("--listen needs a bearer token: set $%s (e.g. to $(openssl rand -hex 32)) or give --token-file", opts.TokenEnv)
		}
	}
	if err := mcpserver.CheckToken(token); err != nil {
		return "", cmdutil.Usagef("%v", err)
	}
	return token, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// boundLoopback checks the address a listener bound, not the name it was
// given: a localhost a hosts file maps elsewhere is refused once bound.
func boundLoopback(listen string, addr net.Addr) error {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return nil
	}
	return cmdutil.Usagef("--listen %s bound %s, which is not a loopback address: use 127.0.0.1:PORT", textsafe.Quote(listen), addr)
}
