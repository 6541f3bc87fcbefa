package drill_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/sandboxtest"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// drillsDir holds the example drills the e2e tests run.
var drillsDir = filepath.Join("..", "..", "..", "docs", "drills")

// exampleDrills are the drills make test runs against the sandbox (and the
// CI workflow example in docs/ci runs on every pull request).
var exampleDrills = []string{"openai-outage", "screening-sim-errors", "flooding-client"}

// sandboxScale runs the sandbox's LLD durations 20 times faster (override
// cache 250 ms, screening-sim's open duration 1.5 s), so the example
// drills, written for LLD time, finish in seconds.
const sandboxScale = 20

// sandboxEnv is a running in-process sandbox and the store it shares with
// koshactl's local context.
type sandboxEnv struct {
	srv   *sandbox.Server
	store store.Store
	url   string
}

// onSandbox isolates koshactl (clitest) and starts an in-process sandbox on
// 127.0.0.1:0 over the local context's store and chaos key, exactly as
// `koshactl sandbox --chaos` would on that installation. SANDBOX_URL points
// the example drills at it.
func onSandbox(t *testing.T) *sandboxEnv {
	t.Helper()
	clitest.New(t)
	fl := sandboxtest.Start(t, os.Getenv("KOSHACTL_STATE_DIR"), sandboxScale, true)
	t.Setenv("SANDBOX_URL", fl.URL())
	return &sandboxEnv{srv: fl.Server, store: fl.Store, url: fl.URL()}
}

// runDrill runs a drill file in process with the production factory and
// the wall clock (the sandbox reads the same store with its own clock).
func runDrill(t *testing.T, file string, args ...string) (drill.Journal, int, string) {
	t.Helper()
	jpath := filepath.Join(t.TempDir(), "journal.json")
	code, out := runDrillJournal(file, jpath, filepath.Join(t.TempDir(), "junit.xml"), args...)
	return readJournal(t, jpath), code, out
}

// runDrillJournal runs a drill writing the journal to jpath, which a test
// may poll while the drill runs (from another goroutine: it never calls t).
func runDrillJournal(file, jpath, junit string, args ...string) (int, string) {
	ios, _, out, errOut := iostreams.Test()
	f := factory.NewWith(ios, clock.Real{})
	opts := &run.Options{File: file, Journal: jpath, JUnit: junit, Output: cmdutil.FormatTable}
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--var":
			opts.Vars = append(opts.Vars, args[i+1])
		case "--report":
			opts.Report = args[i+1]
		}
	}
	err := run.Run(context.Background(), f, opts)
	return exitcode.Of(err), out.String() + errOut.String()
}

func (s *sandboxEnv) gauges(t *testing.T, dep string) map[string]gauge.State {
	t.Helper()
	g := &runtime.MetricsGauges{New: func(context.Context) (metrics.GaugeSource, error) {
		return metrics.NewPrometheus([]string{s.url + sandbox.PathMetrics}, metrics.PrometheusOptions{})
	}}
	r, err := g.Read(context.Background(), dep)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]gauge.State{}
	for _, in := range r.Instances {
		out[in.Instance] = in.State
	}
	return out
}

// assertRolledBack checks the store holds no lever the example drills
// pull: no override of openai, and (when the drill drained it) agent-1's
// bucket full again, as it was before.
func assertRolledBack(t *testing.T, s *sandboxEnv, j drill.Journal) {
	t.Helper()
	if !j.RollbacksOK {
		t.Errorf("rollbacks: %+v", j.Rollbacks)
	}
	ctx := context.Background()
	if _, err := breaker.NewOverrides(s.store, nil).Get(ctx, "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("breaker#openai is still in the store: %v", err)
	}
	b, err := ratelimit.NewBuckets(s.store, nil, ratelimit.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range j.Rollbacks {
		if rb.Subject != ratelimit.Key("agent-1") {
			continue
		}
		if st, err := b.Get(ctx, "agent-1"); err != nil || !st.Full() {
			t.Errorf("agent-1's bucket after the drill: %s tokens %v, want full as before", fmt.Sprint(st.Tokens), err)
		}
	}
}

func TestExampleDrillsPassAgainstTheSandbox(t *testing.T) {
	for _, name := range exampleDrills {
		t.Run(name, func(t *testing.T) {
			s := onSandbox(t)
			j, code, out := runDrill(t, filepath.Join(drillsDir, name+".yaml"))
			if code != exitcode.OK || j.Outcome != drill.OutcomePassed {
				t.Fatalf("exit %d, outcome %s: %s\n%s", code, j.Outcome, j.Reason, out)
			}
			for _, c := range append(j.Hypothesis.Before, j.Hypothesis.After...) {
				if !c.OK {
					t.Errorf("hypothesis %s %q did not hold: %s", c.Phase, c.Name, c.Detail)
				}
			}
			if len(j.Hypothesis.After) != len(j.Hypothesis.Before) {
				t.Errorf("the hypothesis was not re-checked after the rollback: %+v", j.Hypothesis)
			}
			assertRolledBack(t, s, j)
			for _, st := range j.Steps {
				if st.Status != drill.StatusPassed {
					t.Errorf("step %s: %s %s", st.ID, st.Status, st.Error)
				}
			}
		})
	}
}

// The example drills fail, and still roll back, when the platform does not
// degrade the way they expect: a drill that cannot fail proves nothing.
func TestExampleDrillFailsWhenTheDegradationIsWrong(t *testing.T) {
	s := onSandbox(t)
	src, err := os.ReadFile(filepath.Join(drillsDir, "openai-outage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(src), "structuredContent.degraded_reason: embeddings_unavailable", "structuredContent.degraded_reason: something_else", 1)
	if wrong == string(src) {
		t.Fatal("the example drill no longer checks degraded_reason")
	}
	file := writeFile(t, "openai-outage.yaml", wrong)
	j, code, out := runDrill(t, file)
	if code != exitcode.Error || j.Outcome != drill.OutcomeFailed {
		t.Fatalf("exit %d outcome %s\n%s", code, j.Outcome, out)
	}
	if s := j.Steps[2]; s.ID != "degraded" || s.Status != drill.StatusFailed ||
		!strings.Contains(s.Error, `result.structuredContent.degraded_reason: want "something_else", got "embeddings_unavailable"`) {
		t.Errorf("degraded step = %+v", s)
	}
	assertRolledBack(t, s, j)
	wait.Until(t, "openai's breaker closed on every instance reporting", func() bool {
		for _, st := range s.gauges(t, "openai") {
			if st != gauge.Closed {
				return false
			}
		}
		return true
	})
}

var (
	buildOnce sync.Once
	builtDir  string // the directory this process built the binary in
	binPath   string
	buildErr  error
)

// koshactlBinary is make test's binary, or one built once per test process.
func koshactlBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var set bool
		if binPath, set, buildErr = koshabin.FromEnv(); set {
			return
		}
		if builtDir, buildErr = os.MkdirTemp("", "koshactl-drill-e2e-"); buildErr != nil {
			return
		}
		binPath, buildErr = koshabin.Build(t.Context(), builtDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// The interrupt test: run the built binary on interrupted.yaml,
// send it a real SIGINT at the drill's half-way point, and check that every
// lever was rolled back: the override gone, the bucket restored, the
// fleet's breakers closed again, the journal listing the rollbacks, exit 130.
func TestInterruptedDrillRollsEverythingBack(t *testing.T) {
	bin := koshactlBinary(t)
	s := onSandbox(t)
	jpath := filepath.Join(t.TempDir(), "journal.json")
	cmd := exec.CommandContext(t.Context(), bin, "drill", "run", filepath.Join(drillsDir, "interrupted.yaml"), "--journal", jpath) //nolint:gosec // G204: the binary this test built
	cmd.Env = os.Environ()
	var log, stdout syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitForRunningStep(t, cmd, exited, jpath, "halfway", &log)
	// Every lever is pulled at this point.
	if _, err := breaker.NewOverrides(s.store, nil).Get(context.Background(), "openai"); err != nil {
		t.Fatalf("openai is not forced at the half-way point: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(wait.Ceiling):
		_ = cmd.Process.Kill()
		t.Fatalf("koshactl did not exit within %s of SIGINT:\n%s", wait.Ceiling, log.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.Interrupted {
		t.Fatalf("exit: %v, want %d\n%s", err, exitcode.Interrupted, log.String())
	}
	j := readJournal(t, jpath)
	if j.Outcome != drill.OutcomeInterrupted || j.ExitCode != exitcode.Interrupted {
		t.Errorf("journal outcome %s exit %d", j.Outcome, j.ExitCode)
	}
	subjects := map[string]string{}
	for _, rb := range j.Rollbacks {
		subjects[rb.Subject] = rb.Status
		if !strings.HasPrefix(rb.Subject, "chaos#") && rb.StartedAt == nil {
			t.Errorf("rollback %s did not run: %+v", rb.ID, rb)
		}
	}
	if subjects["breaker#openai"] != drill.StatusOK || subjects["rl#agent-1"] != drill.StatusOK || len(j.Rollbacks) != 3 {
		t.Errorf("journal rollbacks: %+v", j.Rollbacks)
	}
	for _, st := range j.Steps {
		want := map[string]string{"halfway": drill.StatusInterrupted, "never": drill.StatusSkipped}[st.ID]
		if want == "" {
			want = drill.StatusPassed
		}
		if st.Status != want {
			t.Errorf("step %s: %s, want %s", st.ID, st.Status, want)
		}
	}
	assertRolledBack(t, s, j)
	if !strings.Contains(log.String(), "received SIGINT: stopping the steps and rolling back") {
		t.Errorf("the live log does not acknowledge the signal:\n%s", log.String())
	}
	// The fleet follows: every instance closes openai's breaker again.
	wait.Until(t, "openai's breaker closed on every instance", func() bool {
		g := s.gauges(t, "openai")
		for _, st := range g {
			if st != gauge.Closed {
				return false
			}
		}
		return len(g) == sandbox.DefaultInstances
	})
	// And the agent is admitted by the sandbox itself.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+sandbox.PathMCP,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_service_health"}}`))
	req.Header.Set("Authorization", "Bearer agent-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("agent-1 after the interrupted drill: HTTP %d", resp.StatusCode)
	}
}
