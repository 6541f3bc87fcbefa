package sandbox_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/sandbox"
	sbx "github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// parse runs the command's flag parsing and returns the options.
func parse(t *testing.T, args ...string) *sandbox.Options {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	var got *sandbox.Options
	cmd := sandbox.NewCmd(&cmdenv.Factory{IOStreams: ios}, func(_ context.Context, o *sandbox.Options) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("sandbox %v: %v", args, err)
	}
	return got
}

func TestFlagsOverrideTheConfigFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(path, []byte("instances: 8\nprofile: degraded\ntraffic: {rps: 2}\ndownstreams: {postgres: {error-rate: 0.25}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parse(t, "--config", path, "--instances", "3", "--profile", "flaky", "--chaos").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Instances != 3 || cfg.Profile != sbx.ProfileFlaky || !cfg.ChaosEnabled || cfg.Traffic.RPS != 2 {
		t.Errorf("instances %d profile %s chaos %v rps %v: flags win, the file fills the rest", cfg.Instances, cfg.Profile, cfg.ChaosEnabled, cfg.Traffic.RPS)
	}
	if cfg.Downstreams[sbx.Postgres].ErrorRate != 0.25 || len(cfg.Downstreams[sbx.OpenAI].Outages) == 0 {
		t.Errorf("the file's downstream settings refine the flag's profile: %+v", cfg.Downstreams)
	}
	cfg, err = parse(t, "--config", path).Resolve()
	if err != nil || cfg.Instances != 8 || cfg.Profile != sbx.ProfileDegraded || cfg.ChaosEnabled {
		t.Errorf("without flags the file applies: %+v %v", cfg, err)
	}
	if err := os.WriteFile(path, []byte("instance: 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parse(t, "--config", path).Resolve(); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "instance") {
		t.Errorf("unknown key: %v (exit %d), want a usage error naming it", err, exitcode.Of(err))
	}
}

func TestConfigPrintsALoadableFile(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	out := cli.MustRun(0, "sandbox", "config", "--profile", "flaky").Stdout
	cfg := sbx.DefaultConfig()
	if err := cfg.DecodeFile([]byte(out), ""); err != nil || cfg.Validate() != nil || cfg.Profile != sbx.ProfileFlaky {
		t.Errorf("sandbox config output does not load: %v, validate: %v, profile %s\n%s", err, cfg.Validate(), cfg.Profile, out)
	}
	if r := cli.Run("sandbox", "config", "--profile", "chaotic"); r.Code != exitcode.Usage {
		t.Errorf("unknown profile: exit %d, %s", r.Code, r.Stderr)
	}
}

func TestStatusOfNoSandboxIsUnavailable(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	r := cli.Run("sandbox", "status", "--url", "http://"+addr)
	// Issue 35: it said "store unavailable", which no store was.
	want := "error: no sandbox is running at http://" + addr + ": start one with koshactl sandbox (or make demo), or give --url of the one you run\n"
	if r.Code != exitcode.Unavailable || r.Stderr != want {
		t.Errorf("exit %d, stderr %q, want 5 and %q", r.Code, r.Stderr, want)
	}
}

func TestListenAddressInUse(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := cli.Run("sandbox", "--listen", ln.Addr().String())
	if r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "another sandbox") {
		t.Errorf("exit %d, stderr %q, want 2 and a hint", r.Code, r.Stderr)
	}
}

// TestDemo runs what `make demo` runs, without a terminal: the sandbox on
// the local context with traffic, a flaky profile and chaos, the status
// view, then a graceful stop.
func TestDemo(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	dir := t.TempDir()
	addrFile, emf := filepath.Join(dir, "url"), filepath.Join(dir, "state.emf.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() {
		done <- cli.RunContext(ctx, "sandbox", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--rps", "60",
			"--profile", "flaky", "--time-scale", "40", "--chaos", "--emf", emf)
	}()
	var url string
	wait.Until(t, "the sandbox's address in --addr-file", func() bool {
		select {
		case r := <-done:
			t.Fatalf("sandbox exited early: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		default:
		}
		b, err := os.ReadFile(addrFile)
		url = strings.TrimSpace(string(b))
		return err == nil && url != ""
	})
	client := &http.Client{Timeout: wait.Ceiling}
	wait.Until(t, "synthetic traffic served on every instance", func() bool {
		st, err := fetchStatus(client, url)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range st.Instances {
			if in.Served < 10 {
				return false
			}
		}
		return len(st.Instances) == 4
	})
	body := get(t, client, url+sbx.PathMetrics)
	for _, want := range []string{`kosha_breaker_state{dependency="openai",instance="gw-1"}`, `kosha_tool_calls_total{outcome="ok",tool="search_knowledge_base"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	st := cli.MustRun(0, "sandbox", "status", "--url", url).Stdout
	for _, want := range []string{"GW-1", "GW-4", "core-api", "openai", "screening-sim", "outbox:"} {
		if !strings.Contains(st, want) {
			t.Errorf("sandbox status lacks %q:\n%s", want, st)
		}
	}
	// An operator's force from another terminal reaches the fleet.
	cli.Clock.Set(time.Now())
	cli.MustRun(0, "breaker", "force-open", "core-api", "--reason", "demo", "--for", "5m")
	wait.Until(t, "core-api forced on every instance", func() bool {
		st, err := fetchStatus(client, url)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range st.Instances {
			if in.Breakers[0].Dependency != sbx.CoreAPI || in.Breakers[0].Value != 3 {
				return false
			}
		}
		return true
	})
	cancel()
	var r clitest.Result
	select {
	case r = <-done:
	case <-time.After(wait.Ceiling):
		t.Fatalf("the sandbox did not stop within %s of its context ending", wait.Ceiling)
	}
	if r.Code != 0 || !strings.Contains(r.Stdout, "serving on "+url) || !strings.Contains(r.Stdout, "stopped after") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(addrFile); err == nil {
		t.Error("--addr-file left behind after stopping")
	}
	b, err := os.ReadFile(emf)
	if err != nil || !strings.Contains(string(b), `"breaker_state":3`) {
		t.Errorf("EMF file: %v, want the forced state among its lines", err)
	}
}

func fetchStatus(client *http.Client, url string) (sbx.Status, error) {
	var st sbx.Status
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url+sbx.PathStatus, nil)
	if err != nil {
		return st, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func get(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestConfigDoesNotPrintConfiguredTokens(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	path := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(path, []byte("principals:\n  - {token: s3cret-t0ken, client: ops-9, role: operator}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := cli.MustRun(0, "sandbox", "config", "--config", path).Stdout
	if strings.Contains(out, "s3cret-t0ken") || !strings.Contains(out, "ops-9") {
		t.Fatalf("config output:\n%s", out)
	}
	cfg := sbx.DefaultConfig()
	if err := cfg.DecodeFile([]byte(out), ""); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "no spaces") {
		t.Errorf("a printed file with a redacted token loads: %v", err)
	}
}

func TestDefaultTokensBeyondLoopbackRefuseToStart(t *testing.T) {
	t.Parallel()
	cli := clitest.New(t, clitest.Parallel())
	// Refused before anything listens: the address is never bound.
	r := cli.Run("sandbox", "--listen", "0.0.0.0:0")
	if r.Code != exitcode.Usage || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 ||
		!strings.Contains(r.Stderr, "default tokens") || !strings.Contains(r.Stderr, "principals: in a --config FILE") {
		t.Errorf("exit %d, stderr %q: want 2 and one line naming --config", r.Code, r.Stderr)
	}
}

func TestAllowedHostFlagReplacesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(path, []byte("allowed-hosts: [from-file.lan]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parse(t, "--config", path).Resolve()
	if err != nil || !slices.Equal(cfg.AllowedHosts, []string{"from-file.lan"}) {
		t.Fatalf("from the file: %v %v", cfg.AllowedHosts, err)
	}
	cfg, err = parse(t, "--config", path, "--allowed-host", "a.lan", "--allowed-host", "10.0.0.5").Resolve()
	if err != nil || !slices.Equal(cfg.AllowedHosts, []string{"a.lan", "10.0.0.5"}) {
		t.Errorf("flags: %v %v", cfg.AllowedHosts, err)
	}
}
