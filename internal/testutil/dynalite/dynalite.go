package dynalite

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CLIPath is where dynalite's entry point sits relative to the repository
// root (the directory holding go.mod).
const CLIPath = "tools/dynalite/node_modules/dynalite/cli.js"

const (
	// pollInterval is how often a starting server is probed.
	pollInterval = 20 * time.Millisecond
	// startTimeout bounds how long a server may take to answer. It only
	// ends a start that hangs: node takes well under a second when the
	// machine is idle, several when every core is busy.
	startTimeout = 2 * time.Minute
	// probeTimeout bounds one health probe; a slow answer is retried.
	probeTimeout = 10 * time.Second
	// portAttempts is how many free ports are tried when another process
	// takes the chosen one between probing it and dynalite binding it.
	portAttempts = 3
)

// Start runs a fresh, empty dynalite for the test and returns its endpoint
// URL (http://127.0.0.1:PORT). The server is stopped, with its whole process
// group, when the test and its subtests finish. A missing dynalite
// installation fails the test with instructions; it never skips.
func Start(tb testing.TB) (endpoint string) {
	tb.Helper()
	s, err := Launch(context.Background())
	if err != nil {
		tb.Fatalf("start dynalite: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("stop dynalite: %v", err)
		}
	})
	return s.Endpoint
}

// StartMain runs a dynalite that outlives single tests, for TestMain or a
// benchmark harness: one server then serves a whole package. Call stop once
// the tests are done; it is safe to call more than once. If the server died
// while the tests ran, stop prints its output to standard error.
func StartMain() (endpoint string, stop func(), err error) {
	s, err := Launch(context.Background())
	if err != nil {
		return "", nil, fmt.Errorf("start dynalite: %w", err)
	}
	return s.Endpoint, func() {
		// A server that died under the tests explains their failures: show
		// its output.
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}, nil
}

// RunMain is a package's TestMain when every test shares one dynalite: it
// starts the server, sets *endpoint, runs the tests, stops the server and
// exits with the tests' code (1 if the server cannot start).
func RunMain(m *testing.M, endpoint *string) {
	ep, stop, err := StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*endpoint = ep
	code := m.Run()
	stop()
	os.Exit(code)
}

// Server is a running dynalite process.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string

	cmd      *exec.Cmd
	out      *syncBuffer
	done     chan struct{} // closed once the process has exited
	waitErr  error         // set before done is closed
	stopOnce sync.Once
	stopErr  error
}

// Launch finds dynalite in the enclosing repository and starts it on a free
// loopback port, returning once it answers requests. ctx bounds the start
// only; the server runs until [Server.Stop].
func Launch(ctx context.Context) (*Server, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find dynalite: %w", err)
	}
	cli, err := FindCLI(wd)
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("find node: %w (install Node.js 20 or later to run the DynamoDB tests)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var lastErr error
	for range portAttempts {
		s, err := launch(ctx, node, cli)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

// FindCLI walks up from dir to the directory holding go.mod and returns the
// path of dynalite's cli.js under it. When dynalite is not installed the error
// says how to install it.
func FindCLI(dir string) (string, error) {
	root, err := repoRoot(dir)
	if err != nil {
		return "", err
	}
	cli := filepath.Join(root, filepath.FromSlash(CLIPath))
	if _, err := os.Stat(cli); err != nil {
		return "", fmt.Errorf("dynalite is not installed (no %s under the repository root %s): "+
			"run `make test`, or `npm ci --prefix tools/dynalite` from the repository root, then rerun the tests", CLIPath, root)
	}
	return cli, nil
}

func repoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("find repository root: no go.mod in %s or any parent directory", dir)
		}
		d = parent
	}
}

var errPortTaken = errors.New("port taken")

// preloadJS keeps dynalite alive when a client aborts a request; see the
// file's comment. It is passed to node as a data: URL, so nothing is written
// to disk.
//
//go:embed preload.mjs
var preloadJS string

func preloadURL() string {
	return "data:text/javascript," + url.PathEscape(preloadJS)
}

func launch(ctx context.Context, node, cli string) (*Server, error) {
	port, err := freePort(ctx)
	if err != nil {
		return nil, err
	}
	return launchOn(ctx, node, cli, port)
}

// launchOn starts dynalite on port and waits until it serves there.
func launchOn(ctx context.Context, node, cli string, port int) (*Server, error) {
	// Not CommandContext: ctx bounds the start, while the server outlives it
	// until Stop. node is found on PATH, cli in the pinned npm install.
	cmd := exec.Command(node, "--import", preloadURL(), cli, //nolint:gosec,noctx // G204: the test server's own node and cli.js; noctx: see above

		"--port", strconv.Itoa(port), "--host", "127.0.0.1",
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	out := &syncBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cli, err)
	}
	s := &Server{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:      cmd,
		out:      out,
		done:     make(chan struct{}),
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// listeningPrefix starts the line dynalite prints once its own socket is
// bound (cli.js: "Dynalite listening at: http://HOST:PORT").
const listeningPrefix = "Dynalite listening at: "

// waitReady waits until this process has bound the port (it says so on
// stdout) and its health page answers, the process exits or ctx ends. The
// health page alone is not enough: between freePort closing the port and
// dynalite binding it another test's dynalite can take it and answer, while
// this one exits with EADDRINUSE.
func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: probeTimeout}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	listening := listeningPrefix + s.Endpoint + "\n"
	for {
		if strings.Contains(s.out.String(), listening) && s.healthy(ctx, client) {
			return nil
		}
		select {
		case <-s.done:
			output := s.out.String()
			if strings.Contains(output, "EADDRINUSE") {
				return fmt.Errorf("start dynalite at %s: %w", s.Endpoint, errPortTaken)
			}
			return fmt.Errorf("dynalite exited before answering (%v); its output:\n%s", s.waitErr, output)
		case <-ctx.Done():
			return fmt.Errorf("wait for dynalite at %s: %w; its output so far:\n%s", s.Endpoint, ctx.Err(), s.out.String())
		case <-tick.C:
		}
	}
}

func (s *Server) healthy(ctx context.Context, client *http.Client) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return resp.StatusCode == http.StatusOK && bytes.HasPrefix(body, []byte("healthy"))
}

// Stop kills the server's process group and waits for the process to exit.
// It is safe to call more than once and from several goroutines.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
			// Exited on its own: report it unless it was clean.
			if s.waitErr != nil {
				s.stopErr = fmt.Errorf("dynalite exited early (%v); its output:\n%s", s.waitErr, s.out.String())
			}
			return
		default:
		}
		if err := killGroup(s.cmd.Process); err != nil {
			s.stopErr = fmt.Errorf("kill dynalite: %w", err)
		}
		<-s.done
	})
	return s.stopErr
}

// Pid returns the server's process id, which is also its process group id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

func freePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	return port, nil
}

// syncBuffer collects the server's output from the copying goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep the head of the output: dynalite logs little, and a runaway log
	// must not grow without bound.
	if room := 64<<10 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
