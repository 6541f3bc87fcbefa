package kinds

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runtime"
	"github.com/kosha-platform/koshactl/internal/human"
)

// bucketConditionKind is the bucket condition: a client's rate-limit bucket
// (read from the store, refilled to now by the data plane's formula)
// admits or refuses, or holds a number of tokens.
//
//	bucket:
//	  client: drill-client
//	  admit: true         # the next request would be admitted
//	  min_tokens: 5       # optional bounds on the refilled level
//	  max_tokens: 20
var bucketConditionKind = conditionKind{name: "bucket",
	summary: "holds when a client's rate-limit bucket admits (or refuses), or holds between min_tokens and max_tokens",
	decode:  decodeBucketCondition}

func decodeBucketCondition(d *drill.Decoder, n *yaml.Node) drill.Spec {
	m := d.Fields(n, "bucket", "client", "admit", "min_tokens", "max_tokens")
	if m == nil {
		return nil
	}
	c := &bucketCondition{}
	var ok bool
	c.client, ok = decodeClient(m)
	if v, present := m.Bool("admit"); present {
		c.admit = &v
	}
	if v, present := m.Float("min_tokens", false); present {
		c.minTokens = &v
	}
	if v, present := m.Float("max_tokens", false); present {
		c.maxTokens = &v
	}
	if c.admit == nil && c.minTokens == nil && c.maxTokens == nil {
		m.Decoder().Errorf(m.Node(), "bucket: give admit, min_tokens or max_tokens")
		ok = false
	}
	if !ok {
		return nil
	}
	return c
}

type bucketCondition struct {
	client               drill.Template
	admit                *bool
	minTokens, maxTokens *float64
}

func (c *bucketCondition) Describe(rc *runtime.RunContext) string {
	what := "holds"
	switch {
	case c.admit != nil && *c.admit:
		what = "admits requests"
	case c.admit != nil:
		what = "refuses requests"
	}
	if c.minTokens != nil {
		what += fmt.Sprintf(" (>= %s tokens)", human.Number(*c.minTokens))
	}
	if c.maxTokens != nil {
		what += fmt.Sprintf(" (<= %s tokens)", human.Number(*c.maxTokens))
	}
	return fmt.Sprintf("the bucket of %s %s", rc.Describe(c.client), what)
}

func (c *bucketCondition) Check(ctx context.Context, rc *runtime.RunContext) (runtime.Observation, error) {
	b, err := buckets(rc)
	if err != nil {
		return runtime.Observation{}, err
	}
	client, err := rc.Expand(c.client)
	if err != nil {
		return runtime.Observation{}, err
	}
	st, err := b.Get(ctx, client)
	if err != nil {
		return runtime.Observation{}, err
	}
	detail := fmt.Sprintf("%s: %s tokens", client, human.Number(st.Tokens))
	if st.Admit {
		detail += ", admits"
	} else {
		detail += fmt.Sprintf(", refuses for %s", human.Duration(drill.DisplayPrecision(st.RetryAfter)))
	}
	holds := (c.admit == nil || *c.admit == st.Admit) &&
		(c.minTokens == nil || st.Tokens >= *c.minTokens) &&
		(c.maxTokens == nil || st.Tokens <= *c.maxTokens)
	return runtime.Observation{Holds: holds, Detail: detail}, nil
}
