package kinds

import (
	"context"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
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
		return fmt.Sprintf("%s, %d times", a.req.describe(rc), a.repeat)
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
			out.Detail = fmt.Sprintf("%d responses; the last %s", a.repeat, resp.summary())
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
		msg += "; body: " + strings.Join(strings.Fields(e.Body), " ")
	}
	return msg
}
