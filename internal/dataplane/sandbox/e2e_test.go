package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// onLocalContext starts a sandbox on the embedded store and chaos key of an
// isolated koshactl installation, so `koshactl ...` commands run in process
// act on the same fleet an operator's would.
func onLocalContext(t *testing.T, cfg sandbox.Config) (*clitest.Env, *harness) {
	t.Helper()
	cli := clitest.New(t, clitest.Parallel())
	cli.Clock.Set(time.Now()) // the CLI's overrides and buckets are stamped with today
	dir := cli.StateDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := start(t, cfg, func(d *sandbox.Deps) {
		d.Store, d.Keys, d.Audit, d.ContextName = st, keys.NewLocal(dir), audit.NewLog(st, clock.Real{}, "local"), "local"
	})
	return cli, h
}

// Scenario 1: force-open reaches every instance within the override cache
// period plus one poll; searches degrade; clear brings every breaker back.
func TestE2EForceOpenReachesEveryInstance(t *testing.T) {
	t.Parallel()
	cli, h := onLocalContext(t, testConfig())
	if !allAre(h.states(sandbox.OpenAI), 4, 0) {
		t.Fatalf("openai before the override: %v", h.states(sandbox.OpenAI))
	}
	// The bound is the cache: an instance reads the override at most once per
	// refresh period, and one read that starts after the write sees it. So
	// count reads, not seconds (a loaded machine stretches seconds): once
	// every instance has read the store twice since the command returned
	// (the first may have started before the write), every one is forced.
	reads := func() []uint64 {
		var n []uint64
		for _, in := range h.srv.Fleet().Instances() {
			d, _ := in.Dependency(sandbox.OpenAI)
			n = append(n, d.Force.Reads())
		}
		return n
	}
	cli.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident drill", "--for", "10m")
	written := reads()
	wait.Until(t, "two override reads on every instance after the write", func() bool {
		for i, n := range reads() {
			if n < written[i]+2 {
				return false
			}
		}
		return true
	})
	if !allAre(h.states(sandbox.OpenAI), 4, 3) {
		t.Fatalf("openai after two override reads on every instance: %v, want forced (3) on all 4", h.states(sandbox.OpenAI))
	}
	for i := 1; i <= 4; i++ {
		r := h.call(agent, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "chargeback reason codes"}, sandbox.InstanceName(i), nil)
		if r.IsError || r.Structured["degraded"] != true || str(r.Structured, "degraded_reason") != sandbox.ReasonEmbeddingsUnavailable {
			t.Errorf("gw-%d search while openai is forced: %s", i, describe(r))
		}
	}
	openai, _ := h.srv.Sim(sandbox.OpenAI)
	before := openai.Calls()
	h.call(agent, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "refund"}, "", nil)
	if openai.Calls() != before {
		t.Error("openai was called while forced open")
	}

	cli.MustRun(0, "breaker", "clear", "openai", "--reason", "drill over")
	wait.Until(t, "openai closed (0) on every instance", func() bool { return allAre(h.states(sandbox.OpenAI), 4, 0) })
	r := h.call(agent, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "refund"}, "", nil)
	if r.Structured["degraded"] != false || str(r.Structured, "ranking") != "hybrid" {
		t.Errorf("search after clear: %s", describe(r))
	}
}

// Scenario 2: a signed error header on screening-sim opens that breaker
// after its minimum calls; screen_entity defers; after the open duration the
// breaker goes half-open, and 3 good probes close it.
func TestE2EChaosErrorOpensTheBreakerAndProbesCloseIt(t *testing.T) {
	t.Parallel()
	cli, h := onLocalContext(t, testConfig())
	hdr := strings.TrimSpace(cli.MustRun(0, "chaos", "sign", "--target", "screening-sim", "--fault", "error", "-o", "value").Stdout)
	withHeader := map[string]string{chaos.HeaderName: hdr}
	minCalls := 5 // half of screening-sim's window of 10
	for i := 1; i <= minCalls; i++ {
		if got := h.states(sandbox.ScreeningSim)["gw-1"]; got != 0 {
			t.Fatalf("screening-sim open (%v) after %d calls, before its minimum of %d", got, i-1, minCalls)
		}
		r := h.call(operator, sandbox.ToolScreenEntity, map[string]any{"name": "Ada Lovelace"}, "gw-1", withHeader)
		if str(r.Structured, "status") != "deferred" || num(r.Structured, "retry_after_s") < 1 {
			t.Fatalf("call %d: %s, want deferred with retry_after_s", i, describe(r))
		}
	}
	states := h.states(sandbox.ScreeningSim)
	if states["gw-1"] != 2 || states["gw-2"] != 0 {
		t.Fatalf("after %d failed calls: %v, want gw-1 open (2) and the others closed", minCalls, states)
	}
	sim, _ := h.srv.Sim(sandbox.ScreeningSim)
	calls := sim.Calls()
	r := h.call(operator, sandbox.ToolScreenEntity, map[string]any{"name": "Ada Lovelace"}, "gw-1", withHeader)
	if str(r.Structured, "status") != "deferred" || sim.Calls() != calls {
		t.Errorf("while open: %s after %d downstream calls, want deferred without calling", describe(r), sim.Calls()-calls)
	}
	// The open duration (1.5 s at the test scale) is far below wait.Ceiling.
	cfg := h.srv.Config()
	open := cfg.Resilience.Dependency(sandbox.ScreeningSim).Breaker.OpenDuration
	wait.Until(t, fmt.Sprintf("gw-1 half-open (1) after the open duration (%s)", open), func() bool { return h.states(sandbox.ScreeningSim)["gw-1"] == 1 })
	for i := 1; i <= 3; i++ {
		r := h.call(operator, sandbox.ToolScreenEntity, map[string]any{"name": "Ada Lovelace"}, "gw-1", nil)
		if str(r.Structured, "status") != "clear" {
			t.Fatalf("probe %d: %s", i, describe(r))
		}
		want := 1.0
		if i == 3 {
			want = 0
		}
		if got := h.states(sandbox.ScreeningSim)["gw-1"]; got != want {
			t.Errorf("after probe %d: state %v, want %v", i, got, want)
		}
	}
	// The CLI's chaos.sign record and the data plane's chaos.applied share the jti.
	jti := hdr[strings.Index(hdr, "jti=")+4 : strings.Index(hdr, ";sig=")]
	wait.Until(t, "chaos.sign and chaos.applied under chaos#"+jti, func() bool {
		actions := map[string]bool{}
		for _, rec := range auditList(t, cli, "--subject", "chaos#"+jti) {
			actions[rec.Action] = true
		}
		return actions["chaos.sign"] && actions[sandbox.ActionChaosApplied]
	})
}

// auditList runs koshactl audit list -o json with args.
func auditList(t *testing.T, cli *clitest.Env, args ...string) []audit.Record {
	t.Helper()
	out := cli.MustRun(0, append([]string{"audit", "list", "-o", "json", "--limit", "0"}, args...)...).Stdout
	var list struct {
		Items []audit.Record `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("audit list -o json: %v\n%s", err, out)
	}
	return list.Items
}

// Scenario 3: headers with a bad signature, expired, over the 15-minute cap
// or from a non-operator are ignored and audited; `koshactl audit list`
// shows them.
func TestE2EIgnoredHeadersAreAudited(t *testing.T) {
	t.Parallel()
	cli, h := onLocalContext(t, testConfig())
	hdr := strings.TrimSpace(cli.MustRun(0, "chaos", "sign", "--target", "screening-sim", "--fault", "error", "-o", "value").Stdout)
	bad := badSignature(hdr)
	cli.Clock.Set(time.Now().Add(-20 * time.Minute))
	expired := strings.TrimSpace(cli.MustRun(0, "chaos", "sign", "--target", "screening-sim", "--fault", "error", "--ttl", "5m", "-o", "value").Stdout)
	cli.Clock.Set(time.Now().Add(10 * time.Minute)) // signed 10 min ahead with a 15 min ttl: exp is 25 min away
	tooFar := strings.TrimSpace(cli.MustRun(0, "chaos", "sign", "--target", "screening-sim", "--fault", "error", "--ttl", "15m", "-o", "value").Stdout)
	cli.Clock.Set(time.Now())
	for _, tc := range []struct{ token, header string }{{operator, bad}, {operator, expired}, {operator, tooFar}, {agent, hdr}} {
		r := h.call(tc.token, sandbox.ToolScreenEntity, map[string]any{"name": "Ada Lovelace"}, "", map[string]string{chaos.HeaderName: tc.header})
		if str(r.Structured, "status") != "clear" {
			t.Errorf("ignored header injected a fault: %s", describe(r))
		}
	}
	wait.Until(t, "four chaos.ignored records in koshactl audit list", func() bool {
		recs := auditList(t, cli, "--action", sandbox.ActionChaosIgnored)
		checks := map[string]bool{}
		for _, rec := range recs {
			var rej chaos.Rejection
			if err := json.Unmarshal(rec.After, &rej); err != nil {
				t.Fatalf("record %s: %v", rec.ID, err)
			}
			checks[string(rej.Check)] = rec.Outcome == sandbox.OutcomeIgnored && rec.Subject == "chaos#"+rej.JTI
			for _, v := range []string{hdr, bad, expired, tooFar} {
				if sig := v[strings.LastIndex(v, "sig=")+4:]; strings.Contains(string(rec.After)+rec.Reason, sig) {
					t.Fatalf("audit record %s holds a header's signature", rec.ID)
				}
			}
		}
		return len(recs) == 4 && checks["signature"] && checks["expiry"] && checks["cap"] && checks["role"]
	})
}

// Scenario 4: a flooding client is rate-limited with retry_after, and
// `koshactl ratelimit reset` lets it through at once.
func TestE2ERateLimitAndReset(t *testing.T) {
	t.Parallel()
	cli, h := onLocalContext(t, testConfig())
	var limited rpcReply
	for i := range 40 {
		r := h.do(req{token: agent, tool: sandbox.ToolGetServiceHealth})
		if r.Status == http.StatusTooManyRequests {
			limited = r
			if i < 20 {
				t.Errorf("limited after %d requests, capacity is 20", i)
			}
			break
		}
	}
	if limited.Error == nil || limited.Error.Data.Code != sandbox.ErrCodeRateLimited || limited.Error.Data.RetryAfter < 1 ||
		limited.Header.Get("Retry-After") == "" {
		t.Fatalf("flood of 40: last %s, want 429 rate_limited with retry_after_s", describe(limited))
	}
	out := cli.MustRun(0, "ratelimit", "get", "agent-1").Stdout
	if !strings.Contains(out, "agent-1") {
		t.Errorf("ratelimit get: %s", out)
	}
	cli.MustRun(0, "ratelimit", "reset", "agent-1", "--reason", "flood test")
	if r := h.do(req{token: agent, tool: sandbox.ToolGetServiceHealth}); r.Status != http.StatusOK {
		t.Errorf("right after reset: %s", describe(r))
	}
}
