package sandbox_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/chaostest"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// screen makes one screen_entity call on instance with a chaos header.
func (h *harness) screen(token, instance, header string) rpcReply {
	h.t.Helper()
	hdr := map[string]string{}
	if header != "" {
		hdr[chaos.HeaderName] = header
	}
	return h.call(token, sandbox.ToolScreenEntity, map[string]any{"name": "Ada Lovelace"}, instance, hdr)
}

func TestChaosHeaderHonouredForOperators(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	hdr := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil)
	r := h.screen(operator, "gw-1", hdr)
	if str(r.Structured, "status") != "deferred" {
		t.Fatalf("error fault on screening-sim: %s, want deferred", describe(r))
	}
	// Each attempt rolls the fault: 2 attempts (screening-sim retries once).
	if v := h.metric("kosha_chaos_faults_total", map[string]string{"target": "screening-sim", "fault": "error", "source": "header"}); v != 2 {
		t.Errorf("kosha_chaos_faults_total = %v, want 2 (two attempts)", v)
	}
	// The header targets screening-sim only.
	if r := h.call(operator, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "refund"}, "gw-1",
		map[string]string{chaos.HeaderName: hdr}); r.IsError || r.Structured["degraded"] != false {
		t.Errorf("a screening-sim header changed search: %s", describe(r))
	}
	h.screen(operator, "gw-2", hdr)
	var applied []audit.Record
	wait.Until(t, "a chaos.applied record", func() bool {
		applied = h.records(sandbox.ActionChaosApplied)
		return len(applied) > 0
	})
	if len(applied) != 1 || applied[0].Actor != "ops-1" || !strings.HasPrefix(applied[0].Subject, "chaos#") {
		t.Errorf("chaos.applied records %+v, want one by ops-1 however many requests used the header", applied)
	}
	if sig := hdr[strings.LastIndex(hdr, "sig=")+4:]; strings.Contains(string(applied[0].After), sig) {
		t.Error("the audit record holds the header's signature")
	}
}

func TestChaosLatencyAndTimeoutFaults(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	// timeout: the attempt hangs until its cap; two timed-out attempts defer.
	r := h.screen(operator, "gw-1", h.mint(chaos.TargetScreeningSim, chaos.FaultTimeout, 0, nil))
	if str(r.Structured, "status") != "deferred" || !strings.Contains(str(r.Structured, "reason"), "timeout") {
		t.Errorf("timeout fault: %s", describe(r))
	}
	// latency: the call waits, then answers.
	start := time.Now()
	r = h.screen(operator, "gw-2", h.mint(chaos.TargetScreeningSim, chaos.FaultLatency, 40, nil))
	if str(r.Structured, "status") != "clear" || time.Since(start) < 40*time.Millisecond {
		t.Errorf("40 ms latency on screening-sim: %s after %s", describe(r), time.Since(start))
	}
	if v := h.metric("kosha_chaos_faults_total", map[string]string{"fault": "latency"}); v != 1 {
		t.Errorf("latency faults counted %v, want 1", v)
	}
	// reset: a connection error.
	r = h.screen(operator, "gw-3", h.mint(chaos.TargetScreeningSim, chaos.FaultReset, 0, nil))
	if !strings.Contains(str(r.Structured, "reason"), "conn_error") {
		t.Errorf("reset fault: %s", describe(r))
	}
}

func TestIgnoredChaosHeadersAreAudited(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	now := time.Now()
	valid := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil)
	badSig := badSignature(valid)
	expired := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, clocktest.NewFake(now.Add(-20*time.Minute)))
	tooLong, err := chaostest.Sign(h.key, chaos.Fields{Target: chaos.TargetScreeningSim, Fault: chaos.FaultError, P: chaos.ProbOne,
		Exp: now.Add(20 * time.Minute).Unix(), JTI: "cap-test-0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, header, reason string
	}{
		{"bad signature", operator, badSig, "signature"},
		{"expired", operator, expired, "expiry"},
		{"over the 15-minute cap", operator, tooLong, "cap"},
		{"non-operator", agent, valid, "role"},
		{"garbage", operator, "v=1;kid=x", "syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.screen(tc.token, "gw-1", tc.header)
			if str(r.Structured, "status") != "clear" {
				t.Errorf("ignored header still injected a fault: %s", describe(r))
			}
			if v := h.metric("kosha_chaos_ignored_total", map[string]string{"reason": tc.reason}); v != 1 {
				t.Errorf("kosha_chaos_ignored_total{reason=%s} = %v, want 1", tc.reason, v)
			}
		})
	}
	if v := h.metric("kosha_chaos_faults_total", nil); v != 0 {
		t.Errorf("%v faults injected by ignored headers", v)
	}
	var recs []audit.Record
	wait.Until(t, "5 chaos.ignored records", func() bool {
		recs = h.records(sandbox.ActionChaosIgnored)
		return len(recs) == 5
	})
	checks := map[string]bool{}
	for _, rec := range recs {
		var rej chaos.Rejection
		if err := json.Unmarshal(rec.After, &rej); err != nil {
			t.Fatalf("after of %s: %v", rec.ID, err)
		}
		checks[string(rej.Check)] = true
		if rec.Outcome != sandbox.OutcomeIgnored || !strings.HasPrefix(rec.Subject, "chaos#") {
			t.Errorf("record %+v: want outcome ignored, subject chaos#<jti>", rec)
		}
		if rej.Check == "syntax" && rec.Subject != sandbox.SubjectUnparsed {
			t.Errorf("unparsable header recorded under %s, want %s", rec.Subject, sandbox.SubjectUnparsed)
		}
		for _, v := range []string{valid, badSig, expired, tooLong} {
			sig := v[strings.LastIndex(v, "sig=")+4:]
			if strings.Contains(string(rec.After), sig) || strings.Contains(rec.Reason, sig) {
				t.Errorf("record %s holds a signature", rec.ID)
			}
		}
	}
	for _, c := range []string{"signature", "expiry", "cap", "role", "syntax"} {
		if !checks[c] {
			t.Errorf("no record for the %s check: %v", c, checks)
		}
	}
}

func TestChaosDisabledIgnoresEveryHeader(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ChaosEnabled = false
	h := start(t, cfg)
	r := h.screen(operator, "gw-1", h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil))
	if str(r.Structured, "status") != "clear" {
		t.Errorf("chaos disabled, valid operator header: %s", describe(r))
	}
	if v := h.metric("kosha_chaos_ignored_total", map[string]string{"reason": sandbox.IgnoredDisabled}); v != 1 {
		t.Errorf("kosha_chaos_ignored_total{reason=disabled} = %v", v)
	}
	wait.Until(t, "a disabled record", func() bool {
		recs := h.records(sandbox.ActionChaosIgnored)
		return len(recs) == 1 && strings.Contains(string(recs[0].After), `"check":"disabled"`)
	})
}

func TestFloodOfIgnoredHeadersWritesFewRecords(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.RateLimit.Capacity = 1000
	cfg.Audit.Interval = time.Second
	cfg.Audit.MaxPerInterval = 3
	for i := range 6 {
		cfg.Principals = append(cfg.Principals, sandbox.Principal{Token: fmt.Sprintf("tok-%d", i), Client: fmt.Sprintf("agent-%d", i+10), Role: sandbox.RoleAgent})
	}
	// The sandbox's clock stands still while the headers arrive, so all of
	// them fall in one audit interval however slowly the machine runs; the
	// test then ends the interval itself.
	clk := clocktest.NewFake(time.Now())
	h := start(t, cfg, func(d *sandbox.Deps) { d.Clock = clk })
	hdr := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, clk)
	const flood = 40
	for range flood {
		h.screen(agent, "", hdr)
	}
	for i := range 6 {
		h.screen(fmt.Sprintf("tok-%d", i), "", hdr)
	}
	if v := h.metric("kosha_chaos_ignored_total", map[string]string{"reason": "role"}); v != flood+6 {
		t.Errorf("ignored counter %v, want %d: every header is counted", v, flood+6)
	}
	// agent-1: one record at once, one summary of the other 39 when the
	// interval ends. The 6 other clients: the cap (3 per interval, agent-1's
	// record included) lets 2 through and sums up 4.
	// Within the interval: agent-1's first record and the 2 more the cap lets
	// through, no summary.
	var recs []audit.Record
	wait.Until(t, "the first records", func() bool {
		recs = h.records(sandbox.ActionChaosIgnored)
		return len(recs) >= 3
	})
	if len(recs) != 3 {
		t.Fatalf("%d records within the interval, want 3 (one per client up to the cap of 3)", len(recs))
	}
	clk.Advance(cfg.Audit.Interval)
	wait.Until(t, "the summaries", func() bool {
		recs = h.records(sandbox.ActionChaosIgnored)
		return len(recs) == 5
	})
	var summary, suppressed *sandbox.IgnoredSummary
	for _, rec := range recs {
		var s sandbox.IgnoredSummary
		if err := json.Unmarshal(rec.After, &s); err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Subject == sandbox.SubjectSuppressed:
			suppressed = &s
		case rec.Actor == "agent-1" && s.Suppressed > 0:
			summary = &s
		}
	}
	if summary == nil || summary.Suppressed != flood-1 {
		t.Errorf("agent-1 summary %+v, want %d suppressed", summary, flood-1)
	}
	if suppressed == nil || suppressed.Suppressed != 4 {
		t.Errorf("global summary %+v, want 4 suppressed", suppressed)
	}
}

// A hanging openai is not degraded at first: its attempt cap (2 s) equals
// core-api's, so core-api's attempt times out with it. Once openai's breaker
// has seen its 5 failures it fails fast, and searches degrade as the matrix
// says.
func TestOpenAIHangDegradesOnceItsBreakerOpens(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	hdr := map[string]string{chaos.HeaderName: h.mint(chaos.TargetOpenAI, chaos.FaultTimeout, 0, nil)}
	var r rpcReply
	calls := 0
	for calls < 10 {
		calls++
		r = h.call(operator, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "refund"}, "gw-1", hdr)
		if r.Structured["degraded"] == true {
			break
		}
		if !r.IsError || str(r.Structured, "dependency") != sandbox.CoreAPI {
			t.Fatalf("call %d: %s, want a core-api failure until openai's breaker opens", calls, describe(r))
		}
	}
	if r.Structured["degraded"] != true || calls < 2 {
		t.Fatalf("after %d calls: %s, want degraded from the second call or so", calls, describe(r))
	}
	if got := h.states(sandbox.OpenAI)["gw-1"]; got != 2 {
		t.Errorf("openai on gw-1 is %v, want open (2)", got)
	}
}

// Issue 35: with two X-Kosha-Chaos headers the first was honored. Which
// of several a proxy or framework keeps differs, so the contract honors
// none: the request is served without a fault, and the header is ignored
// by the syntax check, counted and audited.
func TestTwoChaosHeadersAreNeitherHonored(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	first := h.mint(chaos.TargetScreeningSim, chaos.FaultError, 0, nil)
	second := h.mint(chaos.TargetScreeningSim, chaos.FaultReset, 0, nil)
	r := h.do(req{token: operator, tool: sandbox.ToolScreenEntity, args: map[string]any{"name": "Ada Lovelace"}, instance: "gw-1",
		fields: http.Header{chaos.HeaderName: {first, second}}})
	if r.Status != http.StatusOK || str(r.Structured, "status") != "clear" {
		t.Errorf("two chaos headers: %s, want the call served without a fault", describe(r))
	}
	if v := h.metric("kosha_chaos_faults_total", nil); v != 0 {
		t.Errorf("%v faults injected", v)
	}
	if v := h.metric("kosha_chaos_ignored_total", map[string]string{"reason": "syntax"}); v != 1 {
		t.Errorf("kosha_chaos_ignored_total{reason=syntax} = %v, want 1", v)
	}
	var recs []audit.Record
	wait.Until(t, "a chaos.ignored record", func() bool {
		recs = h.records(sandbox.ActionChaosIgnored)
		return len(recs) == 1
	})
	var rej chaos.Rejection
	if err := json.Unmarshal(recs[0].After, &rej); err != nil || rej.Check != chaos.CheckSyntax || !strings.Contains(rej.Reason, "2 X-Kosha-Chaos fields") {
		t.Errorf("record %+v (%v), want the syntax check naming the 2 fields", rej, err)
	}
	// One header alone is honored, as before.
	if r := h.screen(operator, "gw-2", first); str(r.Structured, "status") != "deferred" {
		t.Errorf("one header: %s, want deferred", describe(r))
	}
}

// Issue 35: the knob took "for":"1000000h". A knob lasts at most the
// chaos header's cap (chaos.MaxTTL, 15 minutes).
func TestChaosKnobDurationIsCapped(t *testing.T) {
	t.Parallel()
	h := start(t, testConfig())
	put := func(body string) (int, string) {
		t.Helper()
		r, err := http.NewRequestWithContext(t.Context(), http.MethodPut, h.url+sandbox.PathAdminChaos, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+operator)
		resp, err := h.client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Error
	}
	sim, _ := h.srv.Sim(sandbox.ScreeningSim)
	for _, long := range []string{"1000000h", "15m1s", "16m"} {
		code, msg := put(`{"fault":"error","for":"` + long + `"}`)
		if code != http.StatusBadRequest || !strings.Contains(msg, "a chaos fault lasts at most 15m") {
			t.Errorf("for %s: HTTP %d %q, want 400 naming the 15m cap", long, code, msg)
		}
		if _, ok := sim.Knob(); ok {
			t.Fatalf("for %s: the knob was set", long)
		}
	}
	if code, msg := put(`{"fault":"error","for":"15m"}`); code != http.StatusOK {
		t.Errorf("for 15m: HTTP %d %q", code, msg)
	}
	if k, ok := sim.Knob(); !ok || k.Until.Sub(k.SetAt) != chaos.MaxTTL {
		t.Errorf("knob after for 15m: %+v, %v", k, ok)
	}
}
