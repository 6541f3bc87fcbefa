package mcpserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/mcpserver"
	"github.com/kosha-platform/koshactl/internal/mcpserver/sessions"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

func TestCheckLoopback(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "[::1]:8788": true, "localhost:1": true, "127.9.9.9:80": true,
		"0.0.0.0:8788": false, ":8788": false, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false} {
		if err := mcpserver.CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("%s: %v, want ok %t", addr, err, ok)
		}
	}
}

// Only the exact bearer token reaches the handler; anything else is 401
// with nothing of the handler served.
func TestAuthorize(t *testing.T) {
	t.Parallel()
	token := strings.Repeat("k", 40)
	h := mcpserver.Authorize(token, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("served")) }))
	for header, want := range map[string]int{"": 401, "Bearer " + token: 200, "Bearer " + token + "x": 401, token: 401,
		"bearer " + token: 401, "Bearer " + token[:39]: 401, "Basic " + token: 401} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want || (want == 401 && strings.Contains(rec.Body.String(), "served")) {
			t.Errorf("%q: %d %q, want %d", header, rec.Code, rec.Body.String(), want)
		}
	}
	if err := mcpserver.CheckToken("short"); err == nil {
		t.Error("a 5-character token accepted")
	}
	if err := mcpserver.CheckToken(strings.Repeat("a", 31) + " b"); err == nil {
		t.Error("a token with a space accepted")
	}
}

func TestSanitizeEscapesAndBoundsEveryString(t *testing.T) {
	t.Parallel()
	doc := map[string]any{"reason": "a\x1b[31m\u202eb\n", "n": 1.5, "items": []any{strings.Repeat("é", 3000)},
		"k\x07": "v", "md": "line 1\nline 2"}
	got, err := mcpserver.Sanitize(doc, "md")
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	if m["reason"] != `a\x1b[31m\u202eb\n` {
		t.Errorf("reason %q", m["reason"])
	}
	if _, ok := m[`k\x07`]; !ok {
		t.Errorf("key not escaped: %v", m)
	}
	if m["md"] != "line 1\nline 2" {
		t.Errorf("a long field keeps its newlines: %q", m["md"])
	}
	cut := m["items"].([]any)[0].(string)
	if want := strings.Repeat("é", mcpserver.MaxString) + mcpserver.TruncatedMarker + "3000 characters]"; cut != want {
		t.Errorf("cut string ends %q", cut[len(cut)-40:])
	}
	if m["n"].(interface{ String() string }).String() != "1.5" {
		t.Errorf("number %v", m["n"])
	}
	// An escape is never split by the cut.
	s, _ := mcpserver.Sanitize(map[string]any{"s": strings.Repeat("\x1b", 1000)})
	v := s.(map[string]any)["s"].(string)
	if !strings.HasPrefix(v, strings.Repeat(`\x1b`, mcpserver.MaxString/4)+mcpserver.TruncatedMarker) {
		t.Errorf("cut inside an escape: %q", v[1000:1040])
	}
}

func TestErrorResultNamesTheExitCode(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		cmdutil.Usagef("bad\nflag"): "usage",
		store.ErrNotFound:           "not found",
		errors.New("boom"):          "error",
		exitcode.Errorf(exitcode.Conflict, "held by someone"): "conflict",
	} {
		res := mcpserver.ErrorResult(err, mcpserver.Output{})
		doc := res.StructuredContent.(map[string]any)
		if !res.IsError || doc["exit_name"] != want || strings.Contains(doc["error"].(string), "\n") {
			t.Errorf("%v: %v", err, doc)
		}
	}
}

// A panic in a tool is that call's tool error: the server lives on for the
// next call, the agent gets no stack, and the log has the stack but never a
// value the panic carried (it could be an argument).
func TestPanicInAToolIsItsToolError(t *testing.T) {
	t.Parallel()
	type in struct {
		Secret string `json:"secret"`
	}
	var log syncbuf.Buffer
	tools := []mcpserver.Tool{
		mcpserver.New("boom", "Boom", "panics", true, func(_ context.Context, a in) (mcpserver.Output, error) {
			panic("holding " + a.Secret)
		}),
		mcpserver.New("index", "Index", "panics in the runtime", true, func(_ context.Context, a in) (mcpserver.Output, error) {
			return mcpserver.Output{Summary: strings.Fields(a.Secret)[3]}, nil
		}),
		mcpserver.New("fine", "Fine", "answers", true, func(context.Context, in) (mcpserver.Output, error) {
			return mcpserver.Output{Doc: map[string]any{"ok": true}, Summary: "fine"}, nil
		}),
	}
	srv := mcpserver.NewServer("test", "1", tools, &log, time.Now)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, name := range []string{"boom", "index", "fine"} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"secret": "s3cret"}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if name == "fine" {
			if res.IsError || text != "fine" {
				t.Errorf("the call after the panics: %+v", res)
			}
			continue
		}
		doc := res.StructuredContent.(map[string]any)
		if !res.IsError || doc["exit_name"] != "error" || !strings.Contains(text, "internal error") ||
			strings.Contains(text, "s3cret") || strings.Contains(text, "goroutine") {
			t.Errorf("%s: %+v", name, res)
		}
	}
	l := log.String()
	if strings.Contains(l, "s3cret") || !strings.Contains(l, "tool=boom args={secret:string} outcome=error (exit 1, error): a panic\n") ||
		!strings.Contains(l, "a panic (runtime error: index out of range") || !strings.Contains(l, "goroutine") {
		t.Errorf("log:\n%s", l)
	}
}

// A browser page of another site cannot reach the HTTP transport even
// with the token (a leaked token in a page's script, a rebinding the Host
// check misses): a cross-origin POST is 403 and never served; the same
// request from a client that is not a browser (no Origin, no
// Sec-Fetch-Site) is served.
func TestHandlerRefusesCrossOriginRequests(t *testing.T) {
	t.Parallel()
	token := strings.Repeat("k", 40)
	var log syncbuf.Buffer
	h := mcpserver.Handler(mcpserver.NewServer("test", "1", nil, &log, time.Now), token, sessions.Limits{})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for name, c := range map[string]struct {
		headers map[string]string
		want    int
	}{
		"cross-site fetch":  {map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusForbidden},
		"other origin only": {map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		"not a browser":     {nil, http.StatusOK},
		"same origin":       {map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:8788/mcp", strings.NewReader(initialize))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want || (c.want == http.StatusForbidden && strings.Contains(rec.Body.String(), "protocolVersion")) {
			t.Errorf("%s: %d %q, want %d", name, rec.Code, rec.Body.String(), c.want)
		}
	}
}

// bearer adds the token to every request of a client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// initialize posts an initialize without a session, as a client opening
// one does; it returns the answer's status, session id and body.
func initialize(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// Issue 45: 5,000 initialize calls opened 5,000 sessions (RSS 31 → 95 MB).
// At most Max sessions are open: one more is refused with 503 and a
// JSON-RPC error naming the cap and the fix, whatever the flood; closing a
// session makes room. Every tool call is logged with its caller and counts.
func TestHandlerCapsSessionsAndCountsCalls(t *testing.T) {
	t.Parallel()
	token := strings.Repeat("k", 40)
	var log syncbuf.Buffer
	tools := []mcpserver.Tool{mcpserver.New("fine", "Fine", "answers", true, func(context.Context, struct{}) (mcpserver.Output, error) {
		return mcpserver.Output{Doc: map[string]any{"ok": true}, Summary: "fine"}, nil
	})}
	srv := mcpserver.NewServer("test", "1", tools, &log, time.Now)
	ts := httptest.NewServer(mcpserver.Handler(srv, token, sessions.Limits{Max: 3}))
	t.Cleanup(ts.Close)

	// A client that calls a tool twice: its caller and counts are logged.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent-x", Version: "2.1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fine"}); err != nil {
			t.Fatal(err)
		}
	}
	id := cs.ID()
	for _, want := range []string{`caller="agent-x 2.1" session=` + id[:8] + ` session_calls=1 tool=fine args={} outcome=ok`,
		`call=2 caller="agent-x 2.1" session=` + id[:8] + ` session_calls=2 tool=fine`, `mcp: session ` + id[:8] + ` opened by caller "agent-x 2.1"`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}

	// A flood of initializes: two more sessions, then refusals.
	var opened []string
	for i := range 200 {
		code, sid, body := initialize(t, ts.URL, token)
		switch {
		case i < 2 && (code != http.StatusOK || sid == ""):
			t.Fatalf("initialize %d under the cap: %d %q", i, code, body)
		case i < 2:
			opened = append(opened, sid)
		case code != http.StatusServiceUnavailable || sid != "" ||
			!strings.Contains(body, "too many MCP sessions: 3 of 3 are open") || !strings.Contains(body, "--max-sessions") ||
			!strings.Contains(body, `"code":-32000`):
			t.Fatalf("initialize %d over the cap: %d %q", i, code, body)
		}
	}
	if n := srv.OpenSessions(); n != 3 {
		t.Errorf("%d sessions open after the flood, want the cap, 3", n)
	}
	if !strings.Contains(log.String(), "mcp: new session refused (1 refusal since the last such line): 3 of 3 sessions open") || strings.Count(log.String(), "new session refused") > 10 {
		t.Errorf("the log does not say sessions were refused, once a second:\n%s", log.String())
	}
	// Closing one makes room for one.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, ts.URL, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", opened[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	wait.Until(t, "the session closed", func() bool { return srv.OpenSessions() == 2 })
	if code, _, body := initialize(t, ts.URL, token); code != http.StatusOK {
		t.Errorf("initialize after a close: %d %q", code, body)
	}
	if code, _, _ := initialize(t, ts.URL, token); code != http.StatusServiceUnavailable {
		t.Errorf("initialize past the cap again: %d", code)
	}
	// The open session still works.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fine"}); err != nil {
		t.Errorf("the client's session after the flood: %v", err)
	}
	_ = cs.Close()
}

func TestCheckSessionLimits(t *testing.T) {
	t.Parallel()
	for _, l := range []sessions.Limits{{}, {Max: 1}, {Max: 1024, Idle: time.Minute}, {Idle: 24 * time.Hour}} {
		if err := sessions.Check(l); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	for _, l := range []sessions.Limits{{Max: -1}, {Max: 1025}, {Idle: time.Second}, {Idle: 25 * time.Hour}} {
		if err := sessions.Check(l); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%+v: %v", l, err)
		}
	}
}
