package sandbox_test

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/golden"

	"github.com/kosha-platform/koshactl/internal/dataplane/sandbox"
)

// The /metrics text of a sandbox is an interface: dashboards, alerts and
// koshactl's own readers (internal/metrics) match its names, HELP, TYPE,
// label names and buckets. These goldens were recorded from the sandbox
// when it still served client_golang's registry; every kosha_* family must
// stay byte for byte what it was.
func TestMetricsTextIsUnchanged(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Instances = 2
	h := start(t, cfg)
	body, ctype := h.metricsText()
	if want := "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"; ctype != want {
		t.Errorf("Content-Type %q, want %q", ctype, want)
	}
	golden.Check(t, "metrics-fresh.txt", koshaFamilies(body))

	// One successful call, one refused: the series that appear on first use.
	h.call(agent, sandbox.ToolSearchKnowledgeBase, map[string]any{"query": "refund"}, "gw-1", nil)
	if r := h.do(req{token: "not-a-token", tool: sandbox.ToolSearchKnowledgeBase, args: map[string]any{"query": "x"}, instance: "gw-2"}); r.Error == nil {
		t.Fatalf("a call with an unknown token was answered: %+v", r)
	}
	body, _ = h.metricsText()
	golden.Check(t, "metrics-after-calls.txt", maskLatency(koshaFamilies(body)))
}

// metricsText GETs /metrics as a scraper that sends no Accept header does.
func (h *harness) metricsText() (body, contentType string) {
	h.t.Helper()
	resp, err := h.get(sandbox.PathMetrics)
	if err != nil {
		h.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("scrape: %v", err)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// koshaFamilies keeps the kosha_* families of a text exposition, in order.
func koshaFamilies(text string) string {
	var b strings.Builder
	keep := false
	for line := range strings.Lines(text) {
		if name, ok := strings.CutPrefix(line, "# HELP "); ok {
			keep = strings.HasPrefix(name, "kosha_")
		}
		if keep {
			b.WriteString(line)
		}
	}
	return b.String()
}

// latencySample is a sample of the called tool's latency histogram whose
// value depends on how long the call took (the count does not).
var latencySample = regexp.MustCompile(`(?m)^(kosha_tool_call_duration_seconds_(?:bucket|sum)\{tool="search_knowledge_base"[^}]*\}) .*$`)

// maskLatency replaces the called tool's time-dependent latency values.
func maskLatency(text string) string {
	return latencySample.ReplaceAllString(text, "$1 <latency>")
}
