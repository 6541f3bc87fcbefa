package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// httpStepKind is the http step: send a request and assert on the response.
//
//	http:
//	  method: POST                       # default GET (POST with json or body)
//	  url: ${vars.sandbox}/mcp           # required
//	  headers: {Authorization: "Bearer ${vars.token}"}
//	  json: {jsonrpc: "2.0", ...}        # a body encoded as JSON, or body: "raw"
//	  expect:
//	    status: 200                      # a code, a class (2xx), or a list; default 2xx
//	    json: {result.degraded: true}    # JSONPath: value or operators
//	    headers: {Retry-After: {exists: true}}
//	    body_contains: "deferred"
//	    max_latency: 2s
//	  repeat: 5                          # send it 5 times; each response must pass
//
// Outputs: status, latency_ms, body, header.NAME, json.PATH.
var httpStepKind = stepKind{name: "http", summary: "send an HTTP request; assert on status, JSON fields, headers, body and latency",
	outputs: []string{"status", "latency_ms", "body", "header.*", "json.*"}, decode: decodeHTTPStep}

// httpConditionKind is the http condition: it holds when a request's
// response meets its expectations (same fields as the http step but
// repeat; status defaults to 2xx).
var httpConditionKind = conditionKind{name: "http",
	summary: "holds when an HTTP response meets its expectations (status, JSON fields, headers, body, latency)",
	decode:  decodeHTTPCondition}

func decodeHTTPCondition(d *drill.Decoder, n *yaml.Node) drill.Spec {
	if r, _ := decodeRequest(d, n, "http"); r != nil {
		return &httpStep{req: r, repeat: 1}
	}
	return nil
}

func decodeHTTPStep(d *drill.Decoder, n *yaml.Node) drill.Spec {
	r, m := decodeRequest(d, n, "http", "repeat")
	if m == nil {
		return nil
	}
	repeat := 1
	if v, present := m.Int("repeat", false); present {
		if v < 1 || v > MaxRepeat {
			m.Errorf("repeat", "%d: send the request 1 to %d times", v, MaxRepeat)
			return nil
		}
		repeat = v
	}
	if r == nil {
		return nil
	}
	return &httpStep{req: r, repeat: repeat}
}

// MaxRepeat bounds an http step's repeat.
const MaxRepeat = 1000

// httpStep is an http step (Run) or condition (Check).
type httpStep struct {
	req    *requestSpec
	repeat int
}

func (a *httpStep) Describe(rc *runtime.RunContext) string {
	if a.repeat > 1 {
		return fmt.Sprintf("%s, %s", a.req.describe(rc), human.Count(int64(a.repeat), "time"))
	}
	return a.req.describe(rc)
}

// Run sends the request repeat times, one after the other; every response
// must meet the expectations. The outputs are the last response's.
func (a *httpStep) Run(ctx context.Context, rc *runtime.RunContext) (*runtime.Outputs, error) {
	var out *runtime.Outputs
	for i := 1; i <= a.repeat; i++ {
		resp, err := a.req.do(ctx, rc)
		if err != nil {
			if a.repeat > 1 {
				err = fmt.Errorf("request %d of %d: %w", i, a.repeat, err)
			}
			return out, err
		}
		out = resp.outputs(rc)
		fails, err := a.req.expect.check(rc, resp)
		if err != nil {
			return out, err
		}
		if len(fails) > 0 {
			e := &ExpectationError{Summary: resp.summary(), Failures: fails, Body: excerpt(rc.Redact(string(resp.body)), 300)}
			if a.repeat > 1 {
				e.Summary = fmt.Sprintf("%d of %d: %s", i, a.repeat, e.Summary)
			}
			return out, e
		}
		out.Detail = resp.summary()
		if a.repeat > 1 {
			out.Detail = fmt.Sprintf("%s; the last %s", human.Count(int64(a.repeat), "response"), resp.summary())
		}
	}
	return out, nil
}

// Check sends the request. A transport failure (refused, reset, timeout)
// is an observation that the condition does not hold, not an evaluation
// error: the endpoint being down is what many drills look for.
func (a *httpStep) Check(ctx context.Context, rc *runtime.RunContext) (runtime.Observation, error) {
	resp, err := a.req.do(ctx, rc)
	if err != nil {
		if ctx.Err() != nil {
			return runtime.Observation{}, ctx.Err()
		}
		return runtime.Observation{Detail: err.Error()}, nil
	}
	fails, err := a.req.expect.check(rc, resp)
	if err != nil {
		return runtime.Observation{}, err
	}
	if len(fails) > 0 {
		return runtime.Observation{Detail: resp.summary() + ": " + strings.Join(fails, "; ")}, nil
	}
	return runtime.Observation{Holds: true, Detail: resp.summary()}, nil
}

// ExpectationError reports the expectations a response did not meet.
type ExpectationError struct {
	// Summary is "503 in 12ms".
	Summary  string
	Failures []string
	// Body is an excerpt of the response body (secrets redacted).
	Body string
}

// Error lists the failed expectations and a body excerpt on one line.
func (e *ExpectationError) Error() string {
	msg := fmt.Sprintf("response %s: %s", e.Summary, strings.Join(e.Failures, "; "))
	if e.Body != "" {
		msg += "; body: " + textsafe.OneLine(e.Body)
	}
	return msg
}

// MaxResponseBody bounds how much of a response body is read.
const MaxResponseBody = 1 << 20

// maxReportedBody bounds the body excerpt kept in reports.
const maxReportedBody = 2048

// requestSpec is an HTTP request as http steps and conditions write it.
type requestSpec struct {
	method  string
	url     drill.Template
	headers []drill.NamedTemplate
	json    any // templated JSON-like value, nil when absent
	hasJSON bool
	body    drill.Template
	expect  expectation
}

var requestFields = []string{"method", "url", "headers", "json", "body", "expect"}

var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

func decodeRequest(d *drill.Decoder, n *yaml.Node, what string, extra ...string) (*requestSpec, *drill.Map) {
	m := d.Fields(n, what, append(append([]string{}, requestFields...), extra...)...)
	if m == nil {
		return nil, nil
	}
	r := &requestSpec{}
	ok := true
	if s, present := m.String("method", false); present {
		r.method = strings.ToUpper(s)
		if !slices.Contains(methods, r.method) {
			m.Errorf("method", "%q is not an HTTP method: use one of %s", s, strings.Join(methods, ", "))
			ok = false
		}
	}
	var uok bool
	r.url, uok = m.URL("url", true)
	ok = ok && uok
	r.headers = m.HeaderMap("headers")
	if v := m.Get("json"); v != nil {
		val, vok := d.Value(v, what+": json", true)
		r.json, r.hasJSON, ok = val, true, ok && vok
	}
	if m.Has("body") {
		if r.hasJSON {
			m.Errorf("body", "give json or body, not both")
			ok = false
		}
		var bok bool
		r.body, bok = m.Decoder().Body(m.Get("body"), what+": body")
		ok = ok && bok
	}
	if r.method == "" {
		r.method = http.MethodGet
		if r.hasJSON || m.Has("body") {
			r.method = http.MethodPost
		}
	}
	e, eok := decodeExpect(d, m.Get("expect"), what+": expect")
	r.expect = e
	if !ok || !eok {
		return nil, m
	}
	return r, m
}

// describe returns "POST http://host/path": the URL as it is sent, or the
// template when it cannot be expanded yet.
func (r *requestSpec) describe(rc *runtime.RunContext) string {
	u, err := r.url.ExpandURL(rc)
	if err != nil {
		return r.method + " " + r.url.String()
	}
	return r.method + " " + rc.Redact(u)
}

// do sends the request and reads the response.
func (r *requestSpec) do(ctx context.Context, rc *runtime.RunContext) (*response, error) {
	if err := runtime.NeedService(rc.Deps.HTTP != nil, "HTTP client"); err != nil {
		return nil, err
	}
	u, err := r.url.ExpandURL(rc)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	var body io.Reader
	var contentType string
	switch {
	case r.hasJSON:
		v, err := drill.ExpandValue(rc, r.json)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode json body: %w", err)
		}
		body, contentType = bytes.NewReader(b), "application/json"
	case !r.body.IsZero():
		s, err := rc.Expand(r.body)
		if err != nil {
			return nil, err
		}
		body = strings.NewReader(s)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %s", rc.Redact(err.Error()))
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", "koshactl-drill")
	for _, h := range r.headers {
		v, err := h.Value.ExpandHeader(rc, h.Name)
		if err != nil {
			return nil, err
		}
		req.Header.Set(h.Name, v)
	}
	start := rc.Now()
	resp, err := rc.Deps.HTTP.Do(req)
	var b []byte
	if err == nil {
		defer resp.Body.Close()
		if b, err = io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody)); err != nil {
			err = fmt.Errorf("read response: %w", err)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %s", r.method, rc.Redact(u), rc.Redact(err.Error()))
	}
	out := &response{status: resp.StatusCode, header: resp.Header, body: b, latency: rc.Now().Sub(start)}
	if len(bytes.TrimSpace(b)) == 0 {
		out.jsonErr = fmt.Errorf("empty body")
	} else {
		out.doc, out.jsonErr = decodeJSON(b)
	}
	return out, nil
}

// outputs turns a response into step outputs: status, latency_ms, body,
// header.NAME and json.PATH.
func (resp *response) outputs(rc *runtime.RunContext) *runtime.Outputs {
	o := runtime.NewOutputs().Set("status", strconv.Itoa(resp.status)).
		Set("latency_ms", strconv.FormatInt(resp.latency.Milliseconds(), 10)).
		Set("body", excerpt(rc.Redact(string(resp.body)), maxReportedBody))
	hdr := resp.header
	o.SetFamily("header.", func(name string) (string, error) {
		vals, ok := hdr[http.CanonicalHeaderKey(name)]
		if !ok || len(vals) == 0 {
			return "", fmt.Errorf("the response had no %s header", name)
		}
		return vals[0], nil
	})
	doc, jerr := resp.doc, resp.jsonErr
	o.SetFamily("json.", func(path string) (string, error) {
		if jerr != nil {
			return "", fmt.Errorf("the response body is not JSON: %w", jerr)
		}
		p, err := ParseJSONPath(path)
		if err != nil {
			return "", err
		}
		v, ok, err := p.Eval(doc)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("the response has nothing at %s", path)
		}
		return jsonText(v), nil
	})
	return o
}

// summary is one line about the response for logs.
func (resp *response) summary() string {
	return fmt.Sprintf("%d in %s", resp.status, human.Duration(drill.DisplayPrecision(resp.latency)))
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d more bytes)", len(s)-n)
}
