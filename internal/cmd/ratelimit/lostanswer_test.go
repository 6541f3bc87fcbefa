package ratelimit_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// Each bucket verb, its change's answer lost after the server applied it:
// the SDK's retry of the same change meets the change's own conditions (or
// is answered as done), and the command must say the change landed
// (confirmed), exit 0, and have written its record once, with it.
func TestBucketChangeWhoseAnswerIsLostIsConfirmedAndAuditedOnce(t *testing.T) {
	t.Parallel()
	e, p := clitest.LostAnswerEnv(t)
	steps := []struct {
		args   []string
		action string
		audit  string
	}{
		{[]string{"drain", "alice", "--create", "--reason", "drill"}, "drained", "ratelimit.drain"},
		{[]string{"set", "alice", "--tokens", "5"}, "set", "ratelimit.set"},
		{[]string{"reset", "alice"}, "reset", "ratelimit.reset"},
	}
	var want []string
	for _, st := range steps {
		p.LoseNext(transact, 1, faultproxy.Reset)
		lost := p.Lost(transact)
		r := e.MustRun(0, append(append([]string{"ratelimit"}, st.args...), "-o", "json")...)
		if p.Lost(transact) != lost+1 {
			t.Fatalf("%s: the proxy lost no answer", st.args[0])
		}
		var out struct {
			Results []struct {
				Action            string `json:"action"`
				AuditID           string `json:"audit_id"`
				ConfirmedByReread bool   `json:"confirmed_by_reread"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
			t.Fatalf("%s: %v\n%s", st.args[0], err, r.Stdout)
		}
		if len(out.Results) != 1 || out.Results[0].Action != st.action || !out.Results[0].ConfirmedByReread || out.Results[0].AuditID == "" {
			t.Fatalf("%s: results %s, want one %s, confirmed, with an audit id", st.args[0], r.Stdout, st.action)
		}
		want = append(want, st.audit)
		sort.Strings(want)
		if got := clitest.AuditActions(t, e, "rl#alice"); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("after %s: audit records on rl#alice %v, want %v (each change once)", st.args[0], got, want)
		}
	}
	// The table output says it too.
	e.MustRun(0, "ratelimit", "drain", "--create", "alice")
	p.LoseNext(transact, 1, faultproxy.Reset)
	if r := e.MustRun(0, "ratelimit", "reset", "alice"); !strings.Contains(r.Stdout, store.ConfirmedNote) {
		t.Fatalf("reset's table output does not say the change was confirmed:\n%s", r.Stdout)
	}
}
