package sandbox_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

const (
	agent    = "agent-token"
	operator = "operator-token"
)

func TestEndpointRefusesWhatItCannotServe(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	for _, tc := range []struct {
		name       string
		r          req
		body       string
		wantStatus int
		wantCode   int
	}{
		{"no token", req{tool: sandbox.ToolGetServiceHealth}, "", http.StatusUnauthorized, sandbox.CodeUnauthorized},
		{"unknown token", req{token: "nope", tool: sandbox.ToolGetServiceHealth}, "", http.StatusUnauthorized, sandbox.CodeUnauthorized},
		{"not JSON", req{token: agent}, "{", http.StatusBadRequest, sandbox.CodeParseError},
		{"batch", req{token: agent}, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, http.StatusBadRequest, sandbox.CodeInvalidRequest},
		{"not JSON-RPC 2.0", req{token: agent}, `{"id":1,"method":"ping"}`, http.StatusBadRequest, sandbox.CodeInvalidRequest},
		{"unknown method", req{token: agent, method: "tools/delete"}, "", http.StatusOK, sandbox.CodeMethodNotFound},
		{"unknown tool", req{token: agent, tool: "drop_tables"}, "", http.StatusOK, sandbox.CodeInvalidParams},
		{"unknown instance", req{token: agent, tool: sandbox.ToolGetServiceHealth, instance: "gw-9"}, "", http.StatusBadRequest, sandbox.CodeInvalidRequest},
		{"malformed deadline", req{token: agent, tool: sandbox.ToolGetServiceHealth, headers: map[string]string{resilience.HeaderDeadline: "soon"}}, "", http.StatusBadRequest, sandbox.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r rpcReply
			if tc.body != "" {
				r = h.post(tc.r, []byte(tc.body))
			} else {
				r = h.do(tc.r)
			}
			if r.Status != tc.wantStatus || r.Error == nil || r.Error.Code != tc.wantCode {
				t.Fatalf("got %s, want HTTP %d code %d", describe(r), tc.wantStatus, tc.wantCode)
			}
			if tc.wantStatus == http.StatusUnauthorized && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer WWW-Authenticate challenge: %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("GET is refused with Allow", func(t *testing.T) {
		resp, err := h.get(sandbox.PathMCP)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("GET %s: %d Allow %q", sandbox.PathMCP, resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
}

func TestToolsListAndInvalidArguments(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	r := h.do(req{token: agent, method: "tools/list"})
	var names []string
	for _, tool := range strings.Split(string(r.Result), `"name":"`)[1:] {
		names = append(names, tool[:strings.IndexByte(tool, '"')])
	}
	if strings.Join(names, ",") != "search_knowledge_base,screen_entity,raise_dispute,flag_transaction_for_review,get_service_health" {
		t.Errorf("tools/list names %v", names)
	}
	for _, tc := range []struct {
		tool string
		args any
	}{
		{sandbox.ToolSearchKnowledgeBase, map[string]any{}},
		{sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "x", "top_k": 11}},
		{sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "x", "color": "red"}},
		{sandbox.ToolScreenEntity, map[string]any{"name": " "}},
		{sandbox.ToolScreenEntity, map[string]any{"name": "Ada", "entity_type": "robot"}},
		{sandbox.ToolRaiseDispute, map[string]any{"transaction_id": "t1"}},
		{sandbox.ToolFlagTransaction, map[string]any{"reason": "odd"}},
		{sandbox.ToolRaiseDispute, map[string]any{"transaction_id": "t1", "reason": "fraud", "amount": -5}},
	} {
		r := h.call(agent, tc.tool, tc.args, "", nil)
		if !r.IsError || str(r.Structured, "error") != sandbox.ErrCodeInvalidParams {
			t.Errorf("%s %v: %s, want invalid_params", tc.tool, tc.args, describe(r))
		}
	}
}

func TestRoutingRoundRobinAndPinned(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	seen := map[string]int{}
	for range 8 {
		r := h.call(agent, sandbox.ToolGetServiceHealth, nil, "", nil)
		inst := r.Header.Get(sandbox.HeaderInstance)
		if str(r.Structured, "instance") != inst {
			t.Fatalf("header says %s, health answered from %s", inst, str(r.Structured, "instance"))
		}
		seen[inst]++
	}
	for i := 1; i <= 4; i++ {
		if seen[sandbox.InstanceName(i)] != 2 {
			t.Errorf("round-robin over 8 calls: %v, want 2 each on gw-1..gw-4", seen)
		}
	}
	for pin, want := range map[string]string{"gw-3": "gw-3", "2": "gw-2"} {
		r := h.call(agent, sandbox.ToolGetServiceHealth, nil, pin, nil)
		if got := r.Header.Get(sandbox.HeaderInstance); got != want {
			t.Errorf("pinned %q answered from %s", pin, got)
		}
	}
}

func TestDegradationMatrix(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	h := start(t, cfg)
	knob := func(target string, f chaos.Fault) func() {
		sim, _ := h.srv.Sim(target)
		if err := sim.SetKnob(sandbox.Knob{Fault: f, P: 1}); err != nil {
			t.Fatal(err)
		}
		return func() { sim.ClearKnob() }
	}
	search := map[string]any{"query": "how do I raise a dispute"}

	t.Run("healthy search is hybrid", func(t *testing.T) {
		r := h.call(agent, sandbox.ToolSearchKnowledgeBase, search, "gw-1", nil)
		if r.IsError || r.Structured["degraded"] != false || str(r.Structured, "ranking") != "hybrid" {
			t.Fatalf("%s", describe(r))
		}
		if res, _ := r.Structured["results"].([]any); len(res) == 0 || str(res[0].(map[string]any), "id") != "kb-101" {
			t.Errorf("results %v, want kb-101 (How to raise a card dispute) first", r.Structured["results"])
		}
	})
	t.Run("openai down: full-text only, degraded", func(t *testing.T) {
		defer knob(sandbox.OpenAI, chaos.FaultError)()
		r := h.call(agent, sandbox.ToolSearchKnowledgeBase, search, "gw-1", nil)
		if r.IsError || r.Structured["degraded"] != true || str(r.Structured, "degraded_reason") != sandbox.ReasonEmbeddingsUnavailable ||
			str(r.Structured, "ranking") != "full_text" {
			t.Fatalf("%s", describe(r))
		}
		if res, _ := r.Structured["results"].([]any); len(res) == 0 {
			t.Error("degraded search returned no results")
		}
	})
	t.Run("screening-sim down: deferred with retry_after_s", func(t *testing.T) {
		defer knob(sandbox.ScreeningSim, chaos.FaultReset)()
		r := h.call(agent, sandbox.ToolScreenEntity, map[string]any{"name": "Ada Lovelace"}, "gw-2", nil)
		if r.IsError || str(r.Structured, "status") != "deferred" || num(r.Structured, "retry_after_s") < 1 || str(r.Structured, "deferral_id") == "" {
			t.Fatalf("%s", describe(r))
		}
		if st := h.srv.Status(); st.Deferred == 0 {
			t.Error("the deferred screening was not recorded")
		}
	})
	t.Run("core-api down: errors name core-api, health still answers", func(t *testing.T) {
		defer knob(sandbox.CoreAPI, chaos.FaultError)()
		for _, tc := range []struct {
			tool string
			args any
		}{
			{sandbox.ToolSearchKnowledgeBase, search},
			{sandbox.ToolRaiseDispute, map[string]any{"transaction_id": "t1", "reason": "fraud"}},
			{sandbox.ToolFlagTransaction, map[string]any{"transaction_id": "t1", "reason": "odd"}},
		} {
			r := h.call(agent, tc.tool, tc.args, "gw-3", nil)
			if !r.IsError || str(r.Structured, "dependency") != sandbox.CoreAPI || num(r.Structured, "retry_after_s") < 1 {
				t.Errorf("%s: %s, want an error naming core-api with retry_after_s", tc.tool, describe(r))
			}
		}
		// Enough failures open gw-3's core-api breaker (window 20, min 10):
		// then calls fail fast as dependency_unavailable.
		for range 10 {
			h.call(agent, sandbox.ToolSearchKnowledgeBase, search, "gw-3", nil)
		}
		r := h.call(agent, sandbox.ToolSearchKnowledgeBase, search, "gw-3", nil)
		if str(r.Structured, "error") != sandbox.ErrCodeDependencyUnavailable || str(r.Structured, "dependency") != sandbox.CoreAPI {
			t.Errorf("after the breaker opened: %s", describe(r))
		}
		hr := h.call(agent, sandbox.ToolGetServiceHealth, nil, "gw-3", nil)
		if hr.IsError || str(hr.Structured, "status") != "unavailable" {
			t.Errorf("health with core-api open: %s", describe(hr))
		}
		if h.states(sandbox.CoreAPI)["gw-3"] != 2 || h.states(sandbox.CoreAPI)["gw-4"] != 0 {
			t.Errorf("core-api gauges %v: want gw-3 open (2), the others closed: state is per instance", h.states(sandbox.CoreAPI))
		}
	})
	t.Run("postgres down: errors name postgres", func(t *testing.T) {
		defer knob(sandbox.Postgres, chaos.FaultError)()
		r := h.call(agent, sandbox.ToolSearchKnowledgeBase, search, "gw-4", nil)
		if !r.IsError || str(r.Structured, "dependency") != sandbox.Postgres || str(r.Structured, "error") != sandbox.ErrCodeDependencyError {
			t.Errorf("%s", describe(r))
		}
	})
}

func TestWritesUseTheOutboxAndIdempotencyKeys(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	args := map[string]any{"transaction_id": "txn-1", "reason": "fraud", "amount": 12.5, "idempotency_key": "k-1"}
	first := h.call(agent, sandbox.ToolRaiseDispute, args, "", nil)
	again := h.call(agent, sandbox.ToolRaiseDispute, args, "", nil)
	if first.IsError || str(first.Structured, "status") != "accepted" || first.Structured["duplicate"] != false {
		t.Fatalf("first: %s", describe(first))
	}
	if str(again.Structured, "id") != str(first.Structured, "id") || again.Structured["duplicate"] != true ||
		str(again.Structured, "event_id") != str(first.Structured, "event_id") {
		t.Errorf("replay with the same key: %v, first %v", again.Structured, first.Structured)
	}
	flag := h.call(agent, sandbox.ToolFlagTransaction, map[string]any{"transaction_id": "txn-2", "reason": "odd"}, "", nil)
	if str(flag.Structured, "status") != "flagged" || !strings.HasPrefix(str(flag.Structured, "id"), "flg_") {
		t.Errorf("flag: %s", describe(flag))
	}
	wait.Until(t, "both events published by the relay", func() bool {
		s := h.srv.Outbox().Stats()
		return s.Pending == 0 && s.Published == 2
	})
}

func TestLoadShedding(t *testing.T) {
	t.Parallel()
	t.Run("in flight above the limit: 503, Retry-After 1", func(t *testing.T) {
		cfg := patientScreening(testConfig())
		cfg.Resilience.MaxInFlight = 1
		h := start(t, cfg)
		sim, _ := h.srv.Sim(sandbox.ScreeningSim)
		if err := sim.SetKnob(sandbox.Knob{Fault: chaos.FaultTimeout, P: 1}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			_, _ = h.try(req{token: agent, tool: sandbox.ToolScreenEntity, args: map[string]any{"name": "Ada"}, instance: "gw-1"})
		})
		in, _ := h.srv.Fleet().Instance("gw-1")
		wait.Until(t, "gw-1 busy", func() bool { return in.Shedder().InFlight() == 1 })
		r := h.do(req{token: agent, tool: sandbox.ToolGetServiceHealth, instance: "gw-1"})
		wg.Wait()
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "1" || r.Error == nil ||
			r.Error.Code != sandbox.CodeOverloaded || r.Error.Data.RetryAfter != 1 {
			t.Fatalf("%s, Retry-After %q", describe(r), r.Header.Get("Retry-After"))
		}
		if v := h.metric("kosha_shed_total", map[string]string{"reason": sandbox.ShedInFlight}); v != 1 {
			t.Errorf("kosha_shed_total{reason=in_flight} = %v, want 1", v)
		}
	})
	t.Run("budget below the tool's minimum: deadline_exceeded, nothing called", func(t *testing.T) {
		h := start(t, testConfig())
		core, _ := h.srv.Sim(sandbox.CoreAPI)
		before := core.Calls()
		soon := resilience.FormatDeadline(time.Now().Add(5 * time.Millisecond))
		r := h.call(agent, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "refund"}, "", map[string]string{resilience.HeaderDeadline: soon})
		if !r.IsError || str(r.Structured, "error") != sandbox.ErrCodeDeadlineExceeded {
			t.Fatalf("%s", describe(r))
		}
		if core.Calls() != before {
			t.Error("core-api was called although the budget was below the minimum")
		}
		if v := h.metric("kosha_shed_total", map[string]string{"reason": sandbox.ShedMinBudget}); v != 1 {
			t.Errorf("kosha_shed_total{reason=min_budget} = %v, want 1", v)
		}
	})
}

func TestRateLimitPerClient(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.RateLimit.Capacity, cfg.RateLimit.RefillPerSecond = 3, 0.01
	h := start(t, cfg)
	for i := range 3 {
		if r := h.do(req{token: agent, tool: sandbox.ToolGetServiceHealth}); r.Status != http.StatusOK {
			t.Fatalf("request %d: %s", i+1, describe(r))
		}
	}
	r := h.do(req{token: agent, tool: sandbox.ToolGetServiceHealth})
	if r.Status != http.StatusTooManyRequests || r.Error == nil || r.Error.Code != sandbox.CodeRateLimited || r.Error.Data.RetryAfter < 1 {
		t.Fatalf("4th request: %s", describe(r))
	}
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra != r.Error.Data.RetryAfter {
		t.Errorf("Retry-After %q, body retry_after_s %d", r.Header.Get("Retry-After"), r.Error.Data.RetryAfter)
	}
	// Another client has its own bucket.
	if r := h.do(req{token: operator, tool: sandbox.ToolGetServiceHealth}); r.Status != http.StatusOK {
		t.Errorf("operator after agent-1 was limited: %s", describe(r))
	}
	if v := h.metric("kosha_rate_limited_total", nil); v != 1 {
		t.Errorf("kosha_rate_limited_total = %v, want 1", v)
	}
}

func TestShutdownDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	h := start(t, patientScreening(testConfig()))
	sim, _ := h.srv.Sim(sandbox.ScreeningSim)
	if err := sim.SetKnob(sandbox.Knob{Fault: chaos.FaultLatency, Ms: 300, P: 1}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   rpcReply
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.try(req{token: agent, tool: sandbox.ToolScreenEntity, args: map[string]any{"name": "Ada"}, instance: "gw-1"})
		done <- result{r, err}
	}()
	in, _ := h.srv.Fleet().Instance("gw-1")
	wait.Until(t, "request in flight", func() bool { return in.Shedder().InFlight() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), wait.Ceiling)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	res := <-done
	if res.err != nil || res.r.Status != http.StatusOK || str(res.r.Structured, "status") != "clear" {
		t.Errorf("request in flight at shutdown: %v %s, want it completed", res.err, describe(res.r))
	}
	if resp, err := h.get(sandbox.PathHealth); err == nil {
		_ = resp.Body.Close()
		t.Error("still serving after Shutdown")
	}
}

// patientScreening gives screen_entity one attempt of up to 1 s (in test
// time) in a 2 s budget, so a test can hold a request in flight.
func patientScreening(cfg sandbox.Config) sandbox.Config {
	op := cfg.Resilience.Operation(sandbox.ScreeningSim, "")
	op.AttemptCap, op.MaxAttempts = 20*time.Second, 1
	cfg.Tools[sandbox.ToolScreenEntity] = sandbox.ToolSettings{Budget: 40 * time.Second, MinBudget: time.Second}
	return cfg
}
