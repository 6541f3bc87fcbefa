package moto

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
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

const (
	// EnvServer names the environment variable that, when set, is the
	// moto_server executable to run (a path, or a name looked up on PATH)
	// instead of moto_server on PATH.
	EnvServer = "KOSHACTL_MOTO_SERVER"
	// Version is the moto release the tests are written against; make
	// test-deps installs it when moto_server is missing.
	Version = "5.2.1"
	// InstallHint says how to install the server.
	InstallHint = "run `make test-deps`, or `pip install 'moto[server]==" + Version + "'`, then rerun the tests"
)

const (
	// pollInterval is how often a starting server is probed.
	pollInterval = 20 * time.Millisecond
	// startTimeout bounds how long a server may take to answer. It only
	// ends a start that hangs: moto takes well under a second when the
	// machine is idle, several when every core is busy.
	startTimeout = 2 * time.Minute
	// probeTimeout bounds one health probe; a slow answer is retried.
	probeTimeout = 10 * time.Second
	// portAttempts is how many free ports are tried when another process
	// takes the chosen one between probing it and moto binding it.
	portAttempts = 3
)

// Start runs a fresh, empty moto server for the test and returns its
// endpoint URL (http://127.0.0.1:PORT). The server is stopped, with its whole
// process group, when the test and its subtests finish. A missing moto
// installation fails the test with instructions; it never skips.
func Start(tb testing.TB) (endpoint string) {
	tb.Helper()
	s, err := Launch(context.Background())
	if err != nil {
		tb.Fatalf("start moto: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("stop moto: %v", err)
		}
	})
	return s.Endpoint
}

// StartMain runs a moto server that outlives single tests, for TestMain or a
// benchmark harness: one server then serves a whole package. Call stop once
// the tests are done; it is safe to call more than once. If the server died
// while the tests ran, stop prints its output to standard error.
func StartMain() (endpoint string, stop func(), err error) {
	s, err := Launch(context.Background())
	if err != nil {
		return "", nil, fmt.Errorf("start moto: %w", err)
	}
	return s.Endpoint, func() {
		// A server that died under the tests explains their failures: show
		// its output.
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}, nil
}

// RunMain is a package's TestMain when every test shares one moto server: it
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

// Server is a running moto_server process behind its front.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT: the front
	// that serializes DynamoDB requests (see [Server.serveFront]).
	Endpoint string

	motoURL  string       // moto_server's own URL
	front    *http.Server // nil until serveFront
	dynamoMu sync.Mutex   // held while moto handles a DynamoDB request
	cmd      *exec.Cmd
	out      *logBuffer
	done     chan struct{} // closed once the process has exited
	waitErr  error         // set before done is closed
	stopOnce sync.Once
	stopErr  error
}

// Launch finds moto_server ([FindServer]) and starts it on a free loopback
// port, returning once it answers requests. ctx bounds the start only; the
// server runs until [Server.Stop].
func Launch(ctx context.Context) (*Server, error) {
	bin, err := FindServer()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var lastErr error
	for range portAttempts {
		s, err := launch(ctx, bin)
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

// FindServer returns the moto_server executable to run: $KOSHACTL_MOTO_SERVER
// when set, else moto_server on PATH. A pyenv shim on PATH is resolved to the
// script it runs (`pyenv which moto_server`), which starts faster than the
// shim and is the process Stop kills. When moto_server is missing the error
// says how to install it.
func FindServer() (string, error) {
	if p := os.Getenv(EnvServer); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s is not an executable moto_server (%w): point it at one, or unset it to use moto_server on PATH", EnvServer, p, err)
		}
		return path, nil
	}
	path, err := exec.LookPath("moto_server")
	if err != nil {
		return "", fmt.Errorf("moto_server, the DynamoDB test server, is not on PATH and %s is unset: %s", EnvServer, InstallHint)
	}
	return resolveShim(path), nil
}

var shims sync.Map // shim path -> the script it runs

// resolveShim returns the script a pyenv shim at path runs, or path itself
// when it is no pyenv shim or pyenv cannot say.
func resolveShim(path string) string {
	if filepath.Base(filepath.Dir(path)) != "shims" {
		return path
	}
	pyenv, err := exec.LookPath("pyenv")
	if err != nil {
		return path
	}
	wd, _ := os.Getwd()
	key := path + "\x00" + os.Getenv("PYENV_VERSION") + "\x00" + wd
	if real, ok := shims.Load(key); ok {
		return real.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, pyenv, "which", filepath.Base(path)).Output() //nolint:gosec // G204: pyenv on PATH, asked for the shim's own name
	real := strings.TrimSpace(string(out))
	if err != nil || real == "" || strings.Contains(real, "\n") {
		return path
	}
	if fi, err := os.Stat(real); err != nil || fi.IsDir() {
		return path
	}
	shims.Store(key, real)
	return real
}

var errPortTaken = errors.New("port taken")

func launch(ctx context.Context, bin string) (*Server, error) {
	port, err := freePort(ctx)
	if err != nil {
		return nil, err
	}
	return launchOn(ctx, bin, port)
}

// launchOn starts moto_server on port and waits until it serves there.
func launchOn(ctx context.Context, bin string, port int) (*Server, error) {
	// Not CommandContext: ctx bounds the start, while the server outlives it
	// until Stop.
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port)) //nolint:gosec,noctx // G204: the test server found by FindServer; noctx: see above
	// MOTO_PORT is the port moto believes it serves on (it builds some URLs
	// from it); one inherited from the caller's environment would be wrong.
	// PYTHONUNBUFFERED: the readiness line must not wait in a pipe buffer.
	cmd.Env = append(os.Environ(), "MOTO_PORT="+strconv.Itoa(port), "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1")
	out := &logBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{
		motoURL: "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:     cmd,
		out:     out,
		done:    make(chan struct{}),
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if err := s.serveFront(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// dynamoTarget starts the X-Amz-Target of every DynamoDB request.
const dynamoTarget = "DynamoDB_20120810."

// serveFront puts a reverse proxy on another free loopback port in front of
// moto and makes it the Endpoint. It passes one DynamoDB request to moto at
// a time: moto's server handles requests on threads, and its conditional
// write reads the item, checks the condition and stores the item without a
// lock, so two concurrent conditional writes of one item could both
// succeed, where DynamoDB applies them one after the other. Other services'
// requests (an SQS long poll among them) pass concurrently.
func (s *Server) serveFront(ctx context.Context) error {
	target, err := url.Parse(s.motoURL)
	if err != nil {
		return fmt.Errorf("moto front: %w", err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // what the client signed
		},
		// A client that gives up mid-request is no error of the server's.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("moto front: %w", err)
	}
	s.front = &http.Server{
		ReadHeaderTimeout: time.Minute,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.Header.Get("X-Amz-Target"), dynamoTarget) {
				s.dynamoMu.Lock()
				defer s.dynamoMu.Unlock()
			}
			proxy.ServeHTTP(w, r)
		}),
	}
	s.Endpoint = "http://" + ln.Addr().String()
	go func() { _ = s.front.Serve(ln) }()
	return nil
}

// runningPrefix starts the line moto_server's web server (werkzeug) prints
// once its own socket is bound: " * Running on http://HOST:PORT".
const runningPrefix = "Running on "

// waitReady waits until this process has bound the port (it says so on its
// output) and its API answers, the process exits or ctx ends. The answer
// alone is not enough: between freePort closing the port and moto binding it
// another test's server can take it and answer, while this one exits with
// "Address already in use".
func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: probeTimeout}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	running := runningPrefix + s.motoURL + "\n"
	for {
		if strings.Contains(s.out.String(), running) && s.healthy(ctx, client) {
			return nil
		}
		select {
		case <-s.done:
			output := s.out.String()
			if strings.Contains(output, "Address already in use") {
				return fmt.Errorf("start moto at %s: %w", s.motoURL, errPortTaken)
			}
			return fmt.Errorf("moto_server exited before answering (%v); its output:\n%s", s.waitErr, output)
		case <-ctx.Done():
			return fmt.Errorf("wait for moto_server at %s: %w; its output so far:\n%s", s.motoURL, ctx.Err(), s.out.String())
		case <-tick.C:
		}
	}
}

// healthy reports whether moto's own API (/moto-api/) answers.
func (s *Server) healthy(ctx context.Context, client *http.Client) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.motoURL+"/moto-api/", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop closes the front, kills the server's process group and waits for the
// process to exit. It is safe to call more than once and from several
// goroutines.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.front != nil {
			_ = s.front.Close()
		}
		select {
		case <-s.done:
			// Exited on its own: report it unless it was clean.
			if s.waitErr != nil {
				s.stopErr = fmt.Errorf("moto_server exited early (%v); its output:\n%s", s.waitErr, s.out.String())
			}
			return
		default:
		}
		if err := killGroup(s.cmd.Process); err != nil {
			s.stopErr = fmt.Errorf("kill moto_server: %w", err)
		}
		<-s.done
	})
	return s.stopErr
}

// Pid returns the server's process id, which is also its process group id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Output returns what the server has printed so far, without its per-request
// access log.
func (s *Server) Output() string { return s.out.String() }

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

// maxLog bounds the output a server keeps.
const maxLog = 64 << 10

// logBuffer collects the server's output from the copying goroutines. It
// drops the web server's access log, one line per request, so what is kept
// (its banner, errors and tracebacks) is not crowded out of the bounded
// buffer by the requests of a long test run.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte // an unfinished line
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data := append(b.partial, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		b.keep(data[:i+1])
		data = data[i+1:]
	}
	// An unfinished line waits for its end, up to the bound.
	if len(data) > maxLog {
		b.keep(data)
		data = nil
	}
	b.partial = append([]byte(nil), data...)
	return len(p), nil
}

func (b *logBuffer) keep(line []byte) {
	if isAccessLog(line) {
		return
	}
	// Keep the head of the output: a runaway log must not grow without
	// bound.
	if room := maxLog - b.buf.Len(); room > 0 {
		b.buf.Write(line[:min(len(line), room)])
	}
}

// isAccessLog reports whether line is one of werkzeug's request lines:
// `127.0.0.1 - - [02/Dec/2026 15:24:07] "POST / HTTP/1.1" 200 -`.
func isAccessLog(line []byte) bool {
	return bytes.HasPrefix(line, []byte("127.0.0.1 - - [")) && bytes.Contains(line, []byte(`] "`))
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String() + string(b.partial)
}
