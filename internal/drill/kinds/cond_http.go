package kinds

import (
	"context"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
)

// httpConditionKind is the http condition: it holds when a request's
// response meets its expectations (same fields as the http step; status
// defaults to 2xx).
var httpConditionKind = conditionKind{name: "http",
	summary: "holds when an HTTP response meets its expectations (status, JSON fields, headers, body, latency)",
	decode:  decodeHTTPCondition}

func decodeHTTPCondition(d *drill.Decoder, n *yaml.Node) drill.Spec {
	r, _ := decodeRequest(d, n, "http")
	if r == nil {
		return nil
	}
	return &httpCondition{req: r}
}

type httpCondition struct{ req *requestSpec }

func (c *httpCondition) Describe(rc *runtime.RunContext) string { return c.req.describe(rc) }

// Check sends the request. A transport failure (refused, reset, timeout)
// is an observation that the condition does not hold, not an evaluation
// error: the endpoint being down is what many drills look for.
func (c *httpCondition) Check(ctx context.Context, rc *runtime.RunContext) (runtime.Observation, error) {
	resp, err := c.req.do(ctx, rc)
	if err != nil {
		if ctx.Err() != nil {
			return runtime.Observation{}, ctx.Err()
		}
		return runtime.Observation{Detail: err.Error()}, nil
	}
	fails, err := c.req.expect.check(rc, resp)
	if err != nil {
		return runtime.Observation{}, err
	}
	if len(fails) > 0 {
		return runtime.Observation{Detail: resp.summary() + ": " + strings.Join(fails, "; ")}, nil
	}
	return runtime.Observation{Holds: true, Detail: resp.summary()}, nil
}
