package mcp_test

import (
	"context"
	"encoding/json"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/koshabin"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// clientDir is the Node client's directory; make test-deps runs npm ci there.
const clientDir = "testdata/client"

// nodeClient is the command that runs the independent client, or a
// failure saying how to install it.
func nodeClient(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for the MCP client test (Node 20): install it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the MCP client's packages are not installed: run make test-deps (npm ci in internal/cmd/mcp/%s): %v", clientDir, err)
	}
	return exec.CommandContext(t.Context(), node, append([]string{filepath.Join(clientDir, "client.mjs")}, args...)...) //nolint:gosec // G204: the test's own client script
}

// e2e is a koshactl installation on an embedded store that a sandbox
// fleet (in this process) shares, with an override in force.
type e2e struct {
	bin   string
	env   []string
	store *sqlite.Store
	// config is the context's file (a test may add to it).
	config string
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(state, "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cfg := sandbox.DefaultConfig()
	cfg.Downstreams, _ = sandbox.Profile(sandbox.ProfileInstant)
	fleet, err := sandbox.New(cfg, sandbox.Deps{Store: s, Clock: clock.Real{}, Logger: slog.New(slog.DiscardHandler), ContextName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(fleet.Handler())
	t.Cleanup(ts.Close)
	conf := "current-context: e2e\ncontexts:\n  e2e:\n    store: {local: {}}\n    metrics: {prometheus: {url: " + ts.URL + sandbox.PathMetrics + "}}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.Real{}
	if _, _, err := levertest.Force(ctx, s, clk, audit.NewLog(s, clk, "e2e"), levertest.Req{Dependency: "openai",
		Reason: "provider incident", Actor: "operator@test", For: time.Hour, ExpiresAt: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, in := range fleet.Fleet().Instances() {
		in.SyncOverrides(ctx)
	}
	return &e2e{bin: koshabin.Path(t), store: s, config: filepath.Join(dir, "config.yaml"), env: append(os.Environ(), "KOSHACTL_CONFIG="+filepath.Join(dir, "config.yaml"),
		"KOSHACTL_STATE_DIR="+state, "KOSHACTL_ACTOR=agent@test", "KOSHACTL_CONTEXT=", "NO_COLOR=1")}
}

// clientResult is what client.mjs prints.
type clientResult struct {
	Tools []struct {
		Name     string `json:"name"`
		ReadOnly bool   `json:"readOnly"`
	} `json:"tools"`
	Status, Propose, Unknown struct {
		IsError    bool           `json:"isError"`
		Structured map[string]any `json:"structured"`
		Text       string         `json:"text"`
	}
}

// check judges the client's session: tools listed, the override in the
// status, a request made and nothing forced, the unknown dependency a tool
// error.
func (e *e2e) check(t *testing.T, out []byte) {
	t.Helper()
	var r clientResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for _, tool := range r.Tools {
		names[tool.Name] = tool.ReadOnly
	}
	if ro, ok := names["breaker_status"]; !ok || !ro || names["propose_force_open"] || !names["freeze_status"] || len(names) != 15 {
		t.Errorf("tools: %+v", r.Tools)
	}
	if r.Status.IsError || !strings.Contains(string(mustJSON(r.Status.Structured)), `"state":"forced_open"`) {
		t.Errorf("status: %+v", r.Status)
	}
	id, _ := r.Propose.Structured["request_id"].(string)
	if r.Propose.IsError || id == "" || r.Propose.Structured["approve_command"] != "koshactl request approve "+id {
		t.Fatalf("proposal: %+v", r.Propose)
	}
	ctx := context.Background()
	if _, err := e.store.Get(ctx, "breaker#core-api"); err == nil {
		t.Error("core-api forced through MCP")
	}
	if it, err := e.store.Get(ctx, "breaker#openai"); err != nil || it.Str("reason") != "provider incident" || it.Str("actor") != "operator@test" {
		t.Errorf("openai's override after the session: %v %v", it, err)
	}
	req, err := approval.RequestFromItem(mustGet(t, e.store, approval.RequestPrefix+id))
	if err != nil || req.Status != approval.StatusPending || req.Requester != "agent@test" {
		t.Errorf("request %s: %+v %v", id, req, err)
	}
	if !r.Unknown.IsError || r.Unknown.Structured["exit_name"] != "usage" || !strings.Contains(r.Unknown.Text, "unknown dependency") {
		t.Errorf("unknown dependency: %+v", r.Unknown)
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func mustGet(t *testing.T, s store.Store, pk string) store.Item {
	t.Helper()
	it, err := s.Get(context.Background(), pk)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func TestNodeClientOverStdio(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	c := nodeClient(t, "stdio", e.bin, "mcp")
	c.Env = e.env
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	e.check(t, out)
	if !strings.Contains(stderr.String(), "tool=propose_force_open args={dependencies:array,for:string,reason:string} outcome=ok") {
		t.Errorf("server log:\n%s", stderr.String())
	}
}

func TestNodeClientOverHTTPWithAndWithoutTheToken(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	token := strings.Repeat("0123456789abcdef", 4)
	addrFile := filepath.Join(t.TempDir(), "url")
	srv := exec.CommandContext(t.Context(), e.bin, "mcp", "--listen", "127.0.0.1:0", "--addr-file", addrFile) //nolint:gosec // G204: the binary under test
	srv.Env = append(e.env, "KOSHACTL_MCP_TOKEN="+token)
	log := &syncbuf.Buffer{} // the server writes it while the test reads it
	srv.Stderr = log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	var url string
	wait.Until(t, "koshactl mcp --listen to write its URL", func() bool {
		b, err := os.ReadFile(addrFile)
		url = strings.TrimSpace(string(b))
		return err == nil && strings.HasSuffix(url, "/mcp")
	})

	for name, auth := range map[string]string{"no token": "", "wrong token": "Bearer " + strings.Repeat("x", 64), "bare token": token} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = io.Copy(&body, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body.String(), "jsonrpc") || strings.Contains(body.String(), token) {
			t.Errorf("%s: %d %q, want 401 and nothing served", name, resp.StatusCode, body.String())
		}
	}

	c := nodeClient(t, "http", url)
	c.Env = append(e.env, "MCP_TOKEN="+token)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s\nserver:\n%s", err, stderr.String(), log.String())
	}
	e.check(t, out)
	if strings.Contains(log.String(), token) {
		t.Error("the server printed its token")
	}
}

// stdio starts koshactl mcp in dir (its working directory) with the Go
// SDK's client; extra is added to its environment. The server's stderr log
// is in the returned buffer once the session is closed.
func (e *e2e) stdio(t *testing.T, dir string, extra ...string) (*sdk.ClientSession, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), e.bin, "mcp") //nolint:gosec // G204: the binary under test
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), e.env...), extra...)
	log := &syncbuf.Buffer{}
	cmd.Stderr = log
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, log
}

// A file argument that is a symbolic link out of the server's working
// directory (a checked-out repository holding drills/x.yaml ->
// ~/.aws/credentials) is refused before it is read: a parse error would
// quote it. A link that stays inside the directory is still followed.
func TestFileArgumentsNeverLeadOutOfTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "credentials")
	must(t, os.WriteFile(secret, []byte("[default]\naws_secret_access_key = not-for-the-agent\n"), 0o600))
	must(t, os.Mkdir(filepath.Join(work, "drills"), 0o700))
	must(t, os.Symlink(secret, filepath.Join(work, "drills", "out.yaml")))
	must(t, os.Symlink(outside, filepath.Join(work, "up")))
	must(t, os.WriteFile(filepath.Join(work, "drills", "in.yaml"), []byte("name: in\n"), 0o600))
	must(t, os.Symlink("in.yaml", filepath.Join(work, "drills", "link.yaml")))
	cs, _ := e.stdio(t, work)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"drill_validate", map[string]any{"files": []string{"drills/out.yaml"}}},
		{"drill_validate", map[string]any{"files": []string{"up/credentials"}}},
		{"drill_plan", map[string]any{"file": "drills/out.yaml"}},
		{"game_day_summary", map[string]any{"journal": "up/credentials"}},
	} {
		res, doc := call(t, cs, c.tool, c.args)
		msg, _ := doc["error"].(string)
		if !res.IsError || doc["exit_name"] != "usage" || !strings.Contains(msg, "symbolic link leading out of the server's working directory") {
			t.Errorf("%s %v: %v", c.tool, c.args, doc)
		}
	}
	// Read and parsed: the (incomplete) drill's own problems.
	res, doc := call(t, cs, "drill_validate", map[string]any{"files": []string{"drills/link.yaml"}})
	if b := string(mustJSON(doc)); res.IsError || !strings.Contains(b, "timeout is required") {
		t.Errorf("a link inside the directory: %s", b)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// drill_plan of an invalid drill is a tool error carrying its problems
// (the first in the message, all in the result), as drill_validate gives
// them; the file's content never reaches the server's log, which names
// calls only.
func TestDrillPlanOfAnInvalidDrillGivesItsProblems(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := t.TempDir()
	must(t, os.WriteFile(filepath.Join(work, "d.yaml"), []byte("name: d\ntimeout: 1m\nsteps:\n  - id: w\n    wiat-for-me: 1s\n"), 0o600))
	cs, log := e.stdio(t, work)
	res, doc := call(t, cs, "drill_plan", map[string]any{"file": "d.yaml"})
	msg, _ := doc["error"].(string)
	if !res.IsError || doc["exit_name"] != "usage" || !strings.Contains(msg, `d.yaml:5:5: step "w": unknown step kind or field "wiat-for-me"`) ||
		strings.Contains(msg, "silent") {
		t.Errorf("plan of an invalid drill: %v", doc)
	}
	if b := string(mustJSON(doc["result"])); !strings.Contains(b, `"line":5`) {
		t.Errorf("the problems are not in the result: %s", b)
	}
	_ = cs.Close()
	if strings.Contains(log.String(), "wiat-for-me") {
		t.Errorf("the drill file's content is in the server's log:\n%s", log.String())
	}
}
