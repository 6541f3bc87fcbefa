package runner

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// hostileHTTP serves /probe with a hostile body (set by the test) and
// header, and records every other request as it arrived.
type hostileHTTP struct {
	body, header string

	mu   sync.Mutex
	seen []*http.Request
	data []string
}

func (h *hostileHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/probe" {
		w.Header().Set("X-Thing", h.header)
		_, _ = io.WriteString(w, h.body)
		return
	}
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.seen = append(h.seen, r)
	h.data = append(h.data, string(b))
	h.mu.Unlock()
	_, _ = io.WriteString(w, "{}")
}

func (h *hostileHTTP) last(t *testing.T) (*http.Request, string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.seen) == 0 {
		t.Fatal("no request arrived")
	}
	return h.seen[len(h.seen)-1], h.data[len(h.data)-1]
}

func hostileEnv(t *testing.T, body, header string) (*env, *hostileHTTP) {
	t.Helper()
	e := newEnv(t)
	h := &hostileHTTP{body: body, header: header}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e.Deps.HTTP = srv.Client()
	e.Deps.LookupEnv = func(n string) (string, bool) { return srv.URL, n == "SRV" }
	return e, h
}

// A step output in a URL's path or query is one path segment or one query
// value: an HTTP answer cannot add query parameters, path segments or a
// fragment to the next request.
func TestStepOutputsInAURLArePercentEncoded(t *testing.T) {
	e, h := hostileEnv(t, "x&admin=true#frag", "../../admin?y=1")
	d := parse(t, `
name: u
timeout: 1m
steps:
  - id: probe
    http: {url: "${env.SRV}/probe"}
  - id: use
    http: {url: "${env.SRV}/items/${steps.probe.header.x-thing}?client=${steps.probe.body}"}
`)
	j, log := e.run(context.Background(), d)
	if j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", j.ExitCode, j.Reason, log)
	}
	r, _ := h.last(t)
	if got, want := r.URL.EscapedPath(), "/items/"+url.PathEscape("../../admin?y=1"); got != want {
		t.Errorf("path = %q, want %q", got, want)
	}
	if q := r.URL.Query(); len(q) != 1 || q.Get("client") != "x&admin=true#frag" {
		t.Errorf("query = %q: the answer changed the next request's parameters", r.URL.RawQuery)
	}
	// The log and the journal show the URL as it was sent.
	if got, want := stepByID(t, j, "use").Description, "GET http://"+r.Host+"/items/..%2F..%2Fadmin%3Fy=1?client=x%26admin%3Dtrue%23frag"; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
}

// An answer holding CR/LF cannot become a header value: the step fails,
// saying which reference and header, and nothing is sent.
func TestStepOutputWithALineBreakIsRefusedAsAHeaderValue(t *testing.T) {
	e, h := hostileEnv(t, "ok\r\nX-Injected: 1", "")
	d := parse(t, `
name: h
timeout: 1m
steps:
  - id: probe
    http: {url: "${env.SRV}/probe"}
  - id: use
    http: {url: "${env.SRV}/use", headers: {X-Echo: "v=${steps.probe.body}"}}
`)
	j, _ := e.run(context.Background(), d)
	s := stepByID(t, j, "use")
	want := `expand ${steps.probe.body} (line 8): the value holds a control character ('\r' at byte 2): header X-Echo cannot carry one`
	if s.Status != drill.StatusFailed || s.Error != want {
		t.Errorf("use = %s %q\nwant %q", s.Status, s.Error, want)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.seen) != 0 {
		t.Errorf("a request was sent: %v", h.seen[0].Header)
	}
}

// A JSON body carries a step output as one JSON string; the raw body and
// a URL's host refuse step outputs when the file is parsed.
func TestStepOutputsInBodiesAndURLBases(t *testing.T) {
	e, h := hostileEnv(t, `"},"admin":true,"x":{"`, "")
	d := parse(t, `
name: b
timeout: 1m
steps:
  - id: probe
    http: {url: "${env.SRV}/probe"}
  - id: use
    http: {url: "${env.SRV}/use", json: {name: "${steps.probe.body}", n: 1}}
`)
	if j, log := e.run(context.Background(), d); j.ExitCode != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", j.ExitCode, j.Reason, log)
	}
	if _, body := h.last(t); body != `{"n":1,"name":"\"},\"admin\":true,\"x\":{\""}` {
		t.Errorf("body = %s", body)
	}

	_, probs := drill.Parse(kinds.Builtin(), "b.yaml", []byte(`name: b
timeout: 1m
steps:
  - id: probe
    http: {url: "http://h/probe"}
  - http: {url: "http://h/use", body: '{"name": "${steps.probe.body}"}'}
  - http: {url: "${steps.probe.body}/x"}
  - http: {url: "http://${steps.probe.json.host}/x"}
  - http: {url: "http${vars.s}://h/"}
vars: {s: s}
`))
	got := drilltest.Problems(probs)
	for _, want := range []string{
		`b.yaml:6:50: http: body: ${steps.probe.body}: a step output would be spliced into the raw body unencoded: send the body as json:, where each value becomes one JSON string`,
		`b.yaml:7:18: http: url: ${steps.probe.body}: a step output cannot choose the host a request goes to: start the URL with text or a variable, and use the output in the path or query, where it is percent-encoded`,
		`b.yaml:8:25: http: url: ${steps.probe.json.host}: a step output cannot choose the host`,
		`b.yaml:9:22: http: url: ${vars.s}: a reference cannot be part of the URL's scheme`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %s:\n%s", want, got)
		}
	}
}

// A variable (from the environment or --var) may choose the base URL, but
// a base that is not an http(s) URL, or that brings a query when a path
// follows, is refused when the request is built.
func TestAURLBaseMustBeAPlainHTTPURL(t *testing.T) {
	for base, want := range map[string]string{
		"file:///etc/hosts":        `expand ${vars.base} (line 5): the value "file:///etc/hosts" is not an http:// or https:// base URL with a host (and no user)`,
		"http://someone@h/":        `the value "http://someone@h/" is not an http:// or https:// base URL`,
		"http://h/?a=1":            `the value "http://h/?a=1" holds a query or fragment, and more of the URL follows it`,
		"http://h\r\nX-Injected:1": `is not an http:// or https:// base URL`,
	} {
		e := newEnv(t)
		d := parse(t, "name: b\ntimeout: 1m\nvars: {base: x}\nsteps:\n  - http: {url: \"${vars.base}/x\"}\n")
		d.Vars[0].Value = drill.Literal(base)
		j, _ := e.run(context.Background(), d)
		if !strings.Contains(j.Steps[0].Error, want) {
			t.Errorf("base %q: error %q, want %q", base, j.Steps[0].Error, want)
		}
	}
}

// recordingGauges records the dependencies it is asked about.
type recordingGauges struct {
	mu   sync.Mutex
	deps []string
}

func (g *recordingGauges) Read(_ context.Context, dep string) (runtime.GaugeReading, error) {
	g.mu.Lock()
	g.deps = append(g.deps, dep)
	g.mu.Unlock()
	return runtime.GaugeReading{}, nil
}

func (g *recordingGauges) Describe() string { return "recording" }

// A dependency name taken from a step output is checked like a literal
// one before it reaches the store or a metrics query.
func TestTemplatedDependencyIsValidatedBeforeAnyQuery(t *testing.T) {
	e, _ := hostileEnv(t, "openai', 'Maximum', 60) OR SEARCH('{x}", "")
	g := &recordingGauges{}
	e.Deps.Gauges = g
	d := parse(t, `
name: q
timeout: 1m
steps:
  - id: probe
    http: {url: "${env.SRV}/probe"}
  - id: chk
    continue_on_failure: true
    assert: {breaker: {dependency: "${steps.probe.body}", state: closed}}
  - id: chk-store
    assert: {breaker: {dependency: "${steps.probe.body}", state: not_forced, source: store}}
`)
	j, _ := e.run(context.Background(), d)
	if s := stepByID(t, j, "chk"); s.Status != drill.StatusFailed || !strings.Contains(s.Error, `invalid dependency name "openai', 'Maximum', 60) OR SEARCH('{x}"`) {
		t.Errorf("chk = %s %q", s.Status, s.Error)
	}
	if s := stepByID(t, j, "chk-store"); s.Status != drill.StatusFailed || !strings.Contains(s.Error, "invalid dependency name") {
		t.Errorf("chk-store = %s %q", s.Status, s.Error)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.deps) != 0 {
		t.Errorf("the gauge source was queried for %q", g.deps)
	}
}
