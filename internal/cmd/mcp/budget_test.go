package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// toolCall is one call the Node client makes ($MCP_CALLS).
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// callResult is what the client got for one call.
type callResult struct {
	IsError    bool           `json:"isError"`
	Structured map[string]any `json:"structured"`
	Text       string         `json:"text"`
}

// An agent in a loop, through the independent (TypeScript SDK) client: 25
// identical proposals store one request and announce it once (the other
// 24 return it, coalesced); 99 different proposals make the hour's 100
// requests (the default budget); the 101st is a tool error (refused) that
// says when to retry, and stores nothing. Every call is in the server's
// log with its caller.
func TestNodeClientAgentInALoopIsCoalescedAndBudgeted(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	rcv := notifytest.Start(t, notifytest.Accept)
	conf, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	conf = append(conf, []byte("    notify:\n      - webhook:\n          url: "+rcv.URL()+"\n")...)
	if err := os.WriteFile(e.config, conf, 0o600); err != nil { //nolint:gosec // G703: the test's own config, in its temp dir
		t.Fatal(err)
	}
	force := func(reason string) toolCall {
		return toolCall{"propose_force_open", map[string]any{"dependencies": []string{"core-api"}, "reason": reason, "for": "15m"}}
	}
	var calls []toolCall
	for range 25 {
		calls = append(calls, force("agent: core-api 5xx"))
	}
	for i := range approval.DefaultProposalsPerHour - 1 {
		calls = append(calls, force(fmt.Sprintf("agent: core-api 5xx, look %d", i+2)))
	}
	calls = append(calls, force("agent: one too many"))
	start := time.Now()
	doc, _ := json.Marshal(calls)

	c := nodeClient(t, "stdio", e.bin, "mcp")
	c.Env = append(e.env, "MCP_CALLS="+string(doc))
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	var got struct{ Calls []callResult }
	if err := json.Unmarshal(out, &got); err != nil || len(got.Calls) != len(calls) {
		t.Fatalf("client output (%d calls, want %d; %d bytes): %v\n…%s", len(got.Calls), len(calls), len(out), err, out[max(0, len(out)-500):])
	}

	first := got.Calls[0]
	id, _ := first.Structured["request_id"].(string)
	if first.IsError || id == "" || first.Structured["coalesced"] != nil {
		t.Fatalf("first proposal: %+v", first)
	}
	for i, r := range got.Calls[1:25] {
		if r.IsError || r.Structured["request_id"] != id || r.Structured["coalesced"] != true || !strings.HasPrefix(r.Text, "Coalesced, nothing new stored or announced") {
			t.Fatalf("identical proposal %d: %+v, want request %s coalesced", i+2, r, id)
		}
	}
	ids := map[string]bool{id: true}
	for i, r := range got.Calls[25:124] {
		rid, _ := r.Structured["request_id"].(string)
		if r.IsError || rid == "" || ids[rid] || r.Structured["coalesced"] != nil {
			t.Fatalf("proposal %d of the hour: %+v", i+2, r)
		}
		ids[rid] = true
	}
	last := got.Calls[124]
	m := regexp.MustCompile(`retry at (\S+) \(in (\d+) seconds\)`).FindStringSubmatch(last.Text)
	if !last.IsError || last.Structured["exit_name"] != "refused" || m == nil {
		t.Fatalf("the 101st proposal of the hour: %+v, want a refusal with a retry time", last)
	}
	at, err := time.Parse(time.RFC3339, m[1])
	secs, _ := strconv.Atoi(m[2])
	if err != nil || at.Before(start.Add(time.Hour-time.Second)) || at.After(time.Now().Add(time.Hour)) || secs < 1 || secs > 3600 {
		t.Errorf("retry at %s in %s seconds: want an hour after the first request (%s)", m[1], m[2], start)
	}

	requests := 0
	for it, err := range e.store.Scan(context.Background(), store.ScanQuery{Prefix: approval.RequestPrefix}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(it.Str("change"), "core-api") {
			requests++
		}
	}
	if requests != approval.DefaultProposalsPerHour {
		t.Errorf("%d requests stored after 125 proposals, want %d", requests, approval.DefaultProposalsPerHour)
	}
	wait.Until(t, "the requests' announcements", func() bool { return len(rcv.Requests()) >= approval.DefaultProposalsPerHour })
	if n := len(rcv.Requests()); n != approval.DefaultProposalsPerHour {
		t.Errorf("%d announcements, want one per request (%d)", n, approval.DefaultProposalsPerHour)
	}
	if n := strings.Count(stderr.String(), `caller="koshactl-e2e 1.0.0"`); n < len(calls) {
		t.Errorf("%d log lines name the caller, want one per call (%d):\n%s", n, len(calls), stderr.String())
	}
}

// The budget is the context's: config set-context takes 1 to 1000, and a
// hand-edited value out of range stops the server before it serves (exit
// 2, naming the key and the fix).
func TestProposalBudgetSettingIsChecked(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, bad := range []string{"0", "1001", "-3"} {
		if r := e.Run("config", "set-context", "agents", "--local", "--mcp-proposals-per-hour", bad); r.Code != exitcode.Usage ||
			!strings.Contains(r.Stderr, "--mcp-proposals-per-hour "+bad+": give 1 to 1000") {
			t.Errorf("--mcp-proposals-per-hour %s: exit %d, %q", bad, r.Code, r.Stderr)
		}
	}
	e.MustRun(0, "config", "set-context", "agents", "--local", "--mcp-proposals-per-hour", "5")
	if r := e.MustRun(0, "config", "view", "-o", "json"); !strings.Contains(r.Stdout, `"proposals-per-hour": 5`) {
		t.Errorf("config after --mcp-proposals-per-hour 5:\n%s", r.Stdout)
	}
	e.WriteConfig("current-context: agents\ncontexts:\n  agents:\n    store: {local: {}}\n    mcp: {proposals-per-hour: 5000}\n")
	if r := e.Run("mcp"); r.Code != exitcode.Usage || !strings.Contains(r.Stderr, "mcp.proposals-per-hour") || !strings.Contains(r.Stderr, "--mcp-proposals-per-hour") {
		t.Errorf("mcp with proposals-per-hour 5000: exit %d, %q", r.Code, r.Stderr)
	}
}
