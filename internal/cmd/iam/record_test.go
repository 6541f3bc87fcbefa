package iam_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/iam"
)

// recorder is what one koshactl process asked of AWS: DynamoDB operations
// with the key prefix of the item they touched (seen on the wire by a proxy
// in front of dynalite), and the other services' operations (seen by the
// SDK's own middleware, from the --debug log).
type recorder struct {
	mu    sync.Mutex
	needs []iam.Need
}

func (r *recorder) add(n iam.Need) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.needs, n) {
		r.needs = append(r.needs, n)
	}
}

// take returns what was recorded since the last take and forgets it.
func (r *recorder) take() []iam.Need {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.needs
	r.needs = nil
	return out
}

// dynamoProxy forwards DynamoDB requests to target and records each
// operation with the prefix of the pk it names (Key, Item, or a scan's
// :prefix filter value). Secrets Manager requests (a context's endpoint-url
// is the endpoint of every service) go to sm unrecorded: the --debug log
// records them.
func dynamoProxy(t *testing.T, target, sm string) (string, *recorder) {
	t.Helper()
	rec := &recorder{}
	client := &http.Client{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		service, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		to := target
		if service == "secretsmanager" {
			to = sm
		} else {
			rec.add(iam.Need{Action: "dynamodb:" + op, Prefix: keyPrefix(body)})
		}
		//nolint:gosec // G704: forwards to the test's own dynalite or fake on loopback
		req, err := http.NewRequestWithContext(r.Context(), r.Method, to+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := client.Do(req) //nolint:gosec // G704: the test's own loopback servers
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, rec
}

// keyPrefix is the item kind ("breaker#") a DynamoDB request body names.
func keyPrefix(body []byte) string {
	type attr struct {
		S string `json:"S"`
	}
	var in struct {
		Key, Item                 map[string]attr
		ExpressionAttributeValues map[string]attr
	}
	if json.Unmarshal(body, &in) != nil {
		return "?"
	}
	pk := in.Key["pk"].S + in.Item["pk"].S + in.ExpressionAttributeValues[":prefix"].S
	if i := strings.IndexByte(pk, '#'); i >= 0 {
		return pk[:i+1]
	}
	return pk
}

// debugNeeds reads the non-DynamoDB operations from a --debug log: lines
// "debug: aws SERVICE OPERATION: ...". STS GetCallerIdentity needs no
// permission and is left out.
func debugNeeds(stderr string) []iam.Need {
	services := map[string]string{"secrets manager": "secretsmanager", "cloudwatch": "cloudwatch"}
	var out []iam.Need
	for _, l := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(l, "debug: aws ")
		if !ok {
			continue
		}
		call, _, _ := strings.Cut(rest, ":")
		i := strings.LastIndexByte(call, ' ')
		if i < 0 {
			continue
		}
		if svc, ok := services[call[:i]]; ok {
			n := iam.Need{Action: svc + ":" + call[i+1:]}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// sameNeeds reports the difference between what was called and what the
// table declares, or "" when they are the same set.
func sameNeeds(called, declared []iam.Need) string {
	var missing, extra []string
	for _, n := range called {
		if !slices.Contains(declared, n) {
			missing = append(missing, n.String())
		}
	}
	for _, n := range declared {
		if !slices.Contains(called, n) {
			extra = append(extra, n.String())
		}
	}
	if len(missing)+len(extra) == 0 {
		return ""
	}
	return fmt.Sprintf("called but not in iam.Commands: %v; in iam.Commands but not called: %v", missing, extra)
}

// newFakeSM starts the Secrets Manager fake (the service's version-stage
// rules) holding the context's chaos secret, still empty.
func newFakeSM(t *testing.T, clk clock.Clock) *smfake.Server {
	t.Helper()
	sm := smfake.New(t, clk)
	sm.Create("kosha/chaos/dev")
	return sm
}
