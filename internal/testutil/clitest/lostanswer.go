package clitest

// The tests of a write whose answer is lost (breaker's and ratelimit's): a
// CLI on a DynamoDB context whose endpoint is a fault proxy in front of
// dynalite, and the audit actions recorded on a subject, so a test can tell
// a write confirmed by re-read and audited once.

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// LostAnswerEnv is a CLI on a DynamoDB context whose endpoint is a fault proxy in
// front of dynalite, with the table created; it sets nothing in the process,
// so its tests may run in parallel.
func LostAnswerEnv(t *testing.T) (*Env, *faultproxy.Proxy) {
	t.Helper()
	p := faultproxy.Start(t, dynalite.Start(t))
	e := New(t, Parallel())
	e.UseDynamoDB(p.URL(), "kosha-control")
	e.MustRun(0, "store", "init")
	return e, p
}

// AuditActions lists the actions of the audit records on subject, sorted
// (the fake clock stamps every record in the same millisecond).
func AuditActions(t *testing.T, e *Env, subject string) []string {
	t.Helper()
	var doc struct {
		Items []struct {
			Action  string `json:"action"`
			Subject string `json:"subject"`
		} `json:"items"`
	}
	out := e.MustRun(0, "audit", "list", "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("audit list -o json: %v\n%s", err, out)
	}
	var acts []string
	for _, r := range doc.Items {
		if r.Subject == subject {
			acts = append(acts, r.Action)
		}
	}
	sort.Strings(acts)
	return acts
}
