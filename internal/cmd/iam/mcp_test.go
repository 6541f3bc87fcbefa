package iam_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/factory/base"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/testutil/syncbuf"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// mcpCall is one tools/call of an MCP session.
type mcpCall struct {
	tool string
	args map[string]any
}

// mcpSession runs `koshactl --debug --context alice mcp` over stdio in
// process (the server acts as alice, an IAM user STS verifies, as a
// deployed server's role session is), makes each call, waits for every
// answer, then closes stdin; it returns the answers by call and the
// server's stderr.
func (w *awsWorld) mcpSession(t *testing.T, calls ...mcpCall) ([]map[string]any, string) {
	t.Helper()
	in, feed := io.Pipe()
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ios, _, _, _ := iostreams.Test()
	ios.In, ios.Out, ios.ErrOut = in, out, errOut
	done := make(chan int, 1)
	go func() {
		done <- root.Run(context.Background(), factory.NewWith(ios, w.Clock, base.WithEnviron(w.Environ())), []string{"--debug", "--context", "alice", "mcp"})
	}()
	send := func(msg map[string]any) {
		b, _ := json.Marshal(msg)
		if _, err := feed.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "iam-test", "version": "1"}}})
	answers := func() map[float64]map[string]any {
		got := map[float64]map[string]any{}
		for _, line := range strings.Split(out.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil {
				if id, ok := m["id"].(float64); ok {
					got[id] = m
				}
			}
		}
		return got
	}
	wait.Until(t, "the MCP server's initialize answer", func() bool { return answers()[0] != nil })
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	for i, c := range calls {
		send(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": map[string]any{"name": c.tool, "arguments": c.args}})
		wait.Until(t, "the answer to "+c.tool, func() bool { return answers()[float64(i+1)] != nil })
	}
	_ = feed.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("koshactl mcp exited %d\n%s", code, errOut.String())
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("koshactl mcp did not end when its stdin closed")
	}
	got := answers()
	res := make([]map[string]any, len(calls))
	for i := range calls {
		res[i] = got[float64(i+1)]
	}
	return res, errOut.String()
}

// The MCP server under the requester's policy: every read tool and every
// proposal succeeds, and calls exactly the operations iam.Commands()
// declares for "mcp": reads, and change requests with their records,
// never a lever write.
func TestMCPServerCallsExactlyItsDeclaredOperations(t *testing.T) {
	w := newPeopleWorld(t)
	w.prepare()
	w.MustRun(0, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m")
	w.MustRun(0, "ratelimit", "set", "agent-1", "--tokens", "5", "--reason", "setup") // a reset, a drain and a set each change it
	// An open review, for pending_requests to read again by key with its
	// proofs (the requests are the proposals' own).
	policyFile := filepath.Join(t.TempDir(), "four-eyes.cedar")
	if err := os.WriteFile(policyFile, []byte(fourEyesAll), 0o600); err != nil {
		t.Fatal(err)
	}
	w.MustRun(0, "policy", "set", policyFile, "--reason", "iam test: four eyes")
	w.MustRun(0, "--context", "alice", "breaker", "force-open", "postgres", "--allow-unknown", "--for", "10m", "--reason", "setup", "--break-glass")
	w.asRole(t, iam.Requester)
	w.rec.take()
	calls := []mcpCall{
		{"breaker_status", map[string]any{}},
		{"breaker_get", map[string]any{"dependency": "openai"}},
		{"audit_list", map[string]any{}},
		{"ratelimit_get", map[string]any{"client": "agent-1"}},
		{"ratelimit_list", map[string]any{}},
		{"propose_force_open", map[string]any{"dependencies": []string{"core-api"}, "reason": "iam test", "for": "10m"}},
		// The same again: coalesced into the first (its request read with
		// its proofs and closed marker; nothing written).
		{"propose_force_open", map[string]any{"dependencies": []string{"core-api"}, "reason": "iam test", "for": "10m"}},
		{"propose_clear", map[string]any{"dependencies": []string{"openai"}, "reason": "iam test"}},
		{"propose_ratelimit_reset", map[string]any{"clients": []string{"agent-1"}, "reason": "iam test"}},
		{"propose_ratelimit_drain", map[string]any{"clients": []string{"agent-1"}, "reason": "iam test"}},
		{"propose_ratelimit_set", map[string]any{"clients": []string{"agent-1"}, "reason": "iam test", "tokens": 7}},
		// The open ones from the lists index, read again by key with their
		// proofs and closed markers; all of them with scans.
		{"pending_requests", map[string]any{}},
		{"pending_requests", map[string]any{"reviews": true}},
		{"pending_requests", map[string]any{"all": true}},
	}
	answers, stderr := w.mcpSession(t, calls...)
	for i, a := range answers {
		r, _ := a["result"].(map[string]any)
		if r == nil || r["isError"] == true {
			t.Errorf("%s: %v", calls[i].tool, a)
		}
	}
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("denied %v", d)
	}
	if r, _ := answers[6]["result"].(map[string]any); r == nil || r["structuredContent"].(map[string]any)["coalesced"] != true {
		t.Errorf("the identical proposal: %v, want it coalesced", answers[6])
	}
	got := append(w.rec.take(), debugNeeds(stderr)...)
	// A proposal whose answer is lost is settled by reading its request.
	lost := w.proxy.Lost()
	w.enf.SetPolicy(nil)
	loseChange(w.proxy, nil)
	w.asRole(t, iam.Requester)
	answers, stderr = w.mcpSession(t, mcpCall{"propose_force_open", map[string]any{"dependencies": []string{"screening-sim"}, "reason": "iam test"}})
	w.proxy.LoseAnswers(nil)
	if r, _ := answers[0]["result"].(map[string]any); r == nil || r["isError"] == true || w.proxy.Lost() == lost {
		t.Errorf("a proposal whose answer was lost (lost %d): %v", w.proxy.Lost()-lost, answers[0])
	}
	got = append(got, append(w.rec.take(), debugNeeds(stderr)...)...)
	if d := sameNeeds(got, iam.Commands()["mcp"]); d != "" {
		t.Errorf("koshactl mcp: %s", d)
	}
	// The proposer's own items are needed: without their write a proposal
	// is denied (a tool error naming the denial, nothing stored).
	full := policyOf(t, iam.Requester, testTarget)
	i := slices.IndexFunc(full.Statement, func(s iam.Statement) bool { return s.Sid == "ItemsOwnProposalsInTransactions" })
	if i < 0 {
		t.Fatalf("the requester's policy has no statement for its own proposals: %+v", full.Statement)
	}
	w.enf.SetPolicy(withoutAction(*full, i, iam.PutItem))
	answers, _ = w.mcpSession(t, mcpCall{"propose_force_open", map[string]any{"dependencies": []string{"core-api"}, "reason": "iam test, again"}})
	denied := w.enf.TakeDenials()
	if r, _ := answers[0]["result"].(map[string]any); r == nil || r["isError"] != true || len(denied) == 0 || denied[0].Action != iam.PutItem {
		t.Errorf("a proposal without its own items' write: %v, denied %v", answers[0], denied)
	}
	// Proposals wrote requests only: the levers are as they were.
	if out := w.MustRun(0, "breaker", "get", "openai", "-o", "json").Stdout; !strings.Contains(out, `"reason": "iam test"`) {
		t.Errorf("openai after the proposals: %s", out)
	}
	w.MustRun(3, "breaker", "get", "core-api")
}

// The MCP server of a context marked mcp: {read-only: true} under the
// reader's policy (docs/mcp.md: it needs only the reader's): it offers
// no proposal tool, every read tool answers, nothing is denied, and it
// calls exactly what iam.Commands() declares for "mcp --read-only".
func TestReadOnlyMCPServerRunsUnderTheReadersPolicy(t *testing.T) {
	w := newPeopleWorld(t)
	w.prepare()
	w.MustRun(0, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m")
	w.MustRun(0, "ratelimit", "set", "agent-1", "--tokens", "5", "--reason", "setup")
	// A pending request and an open review, for pending_requests to read
	// from the lists index and again by key with their proofs, and with
	// scans for all of them.
	policyFile := filepath.Join(t.TempDir(), "four-eyes.cedar")
	if err := os.WriteFile(policyFile, []byte(fourEyesAll), 0o600); err != nil {
		t.Fatal(err)
	}
	w.MustRun(0, "policy", "set", policyFile, "--reason", "iam test: four eyes")
	w.MustRun(0, "--context", "alice", "breaker", "force-open", "postgres", "--allow-unknown", "--for", "10m", "--reason", "setup", "--break-glass")
	w.MustRun(exitcode.Pending, "--context", "alice", "breaker", "force-open", "core-api", "--for", "10m", "--reason", "setup")
	w.MustRun(0, "config", "set-context", "alice", "--mcp-read-only")
	w.asRole(t, iam.Reader)
	w.rec.take()
	calls := []mcpCall{
		{"breaker_status", map[string]any{}},
		{"freeze_status", map[string]any{}},
		{"breaker_get", map[string]any{"dependency": "openai"}},
		{"audit_list", map[string]any{}},
		{"ratelimit_get", map[string]any{"client": "agent-1"}},
		{"ratelimit_list", map[string]any{}},
		{"pending_requests", map[string]any{}},
		{"pending_requests", map[string]any{"reviews": true}},
		{"pending_requests", map[string]any{"all": true}},
		{"propose_force_open", map[string]any{"dependencies": []string{"core-api"}, "reason": "iam test"}},
	}
	answers, stderr := w.mcpSession(t, calls...)
	for i, a := range answers[:len(answers)-1] {
		if r, _ := a["result"].(map[string]any); r == nil || r["isError"] == true {
			t.Errorf("%s: %v", calls[i].tool, a)
		}
	}
	if last := answers[len(answers)-1]; last["error"] == nil {
		t.Errorf("a proposal tool on a read-only context: %v, want unknown tool", last)
	}
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("the reader's read-only MCP server was denied %v", d)
	}
	if d := sameNeeds(append(w.rec.take(), debugNeeds(stderr)...), iam.Commands()["mcp --read-only"]); d != "" {
		t.Errorf("koshactl mcp (read-only): %s", d)
	}
}
