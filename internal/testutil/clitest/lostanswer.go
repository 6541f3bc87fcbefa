package clitest

// The tests of a write whose answer is lost (breaker's and ratelimit's): a
// CLI on a DynamoDB context whose endpoint is a fault proxy in front of
// moto, and the audit actions recorded on a subject, so a test can tell
// a write confirmed by re-read and audited once.

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// LostAnswerEnv is a CLI on a DynamoDB context whose endpoint is a fault proxy in
// front of moto, with the table created; it sets nothing in the process,
// so its tests may run in parallel.
func LostAnswerEnv(t *testing.T) (*Env, *faultproxy.Proxy) {
	t.Helper()
	p := faultproxy.Start(t, moto.Start(t))
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

// RepairArgs finds the repair command an exit 8 printed on stderr ("write
// the missing audit record with: koshactl …") and returns its arguments as a
// shell would split them (every value is single-quoted and holds no quote or
// space), to be run with [Env.Run].
func RepairArgs(t testing.TB, stderr string) []string {
	t.Helper()
	const lead = "write the missing audit record with: koshactl "
	for line := range strings.Lines(stderr) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), lead); ok {
			args := strings.Fields(rest)
			for i, a := range args {
				args[i] = strings.Trim(a, "'")
			}
			return args
		}
	}
	t.Fatalf("exit 8 printed no repair command:\n%s", stderr)
	return nil
}
