package impact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// fakeRates answers Rates with rates or err, recording what it was asked.
type fakeRates struct {
	rates    metrics.CallRates
	err      error
	asked    metrics.RateRequest
	deadline time.Duration
	calls    int
}

func (f *fakeRates) Describe() string { return "prometheus http://127.0.0.1:8787/metrics" }

func (f *fakeRates) Rates(ctx context.Context, req metrics.RateRequest) (metrics.CallRates, error) {
	f.calls++
	f.asked = req
	if d, ok := ctx.Deadline(); ok {
		f.deadline = time.Until(d)
	}
	if err := ctx.Err(); err != nil {
		return metrics.CallRates{}, err
	}
	return f.rates, f.err
}

func screeningRates() metrics.CallRates {
	return metrics.CallRates{Source: "prometheus http://127.0.0.1:8787/metrics", Method: "counters' increase between two scrapes 5s apart",
		Window: 5 * time.Second, Tools: map[string]float64{impact.ToolScreenEntity: 25},
		Dependencies: map[string]float64{impact.ScreeningSim: 31.5}}
}

// affected reports whether r names a tool whose behaviour changes.
func affected(r impact.Report) bool {
	return slices.ContainsFunc(r.Tools, func(t impact.ToolImpact) bool { return t.Behaviour != impact.Unaffected })
}

func TestStaticNamesTheToolsAForceChanges(t *testing.T) {
	t.Parallel()
	r := impact.Static(impact.Request{Dependencies: []string{impact.ScreeningSim}, For: 30 * time.Minute})
	if len(r.Tools) != 1 || r.Tools[0].Tool != impact.ToolScreenEntity || r.Tools[0].Behaviour != impact.Deferred ||
		r.Tools[0].Signal.Text != `status: "deferred" with retry_after_s` {
		t.Fatalf("tools %+v, want screen_entity deferred", r.Tools)
	}
	if r.ForSeconds != 1800 || len(r.Dependencies) != 1 || !r.Dependencies[0].Obeyed || r.Rates != nil || !affected(r) {
		t.Errorf("report %+v", r)
	}
}

func TestStaticSaysAnOverrideWithoutABreakerChangesNothing(t *testing.T) {
	t.Parallel()
	r := impact.Static(impact.Request{Dependencies: []string{impact.Postgres}})
	if len(r.Tools) != 0 || affected(r) {
		t.Fatalf("tools %+v: postgres has no breaker, forcing it changes no tool", r.Tools)
	}
	d := r.Dependencies[0]
	if d.Obeyed || !d.InMatrix || len(d.WhenDown) != 3 || d.WhenDown[0].Behaviour != impact.Failed ||
		!strings.Contains(d.Note, "no instance obeys this override") {
		t.Errorf("postgres %+v", d)
	}
	u := impact.Static(impact.Request{Dependencies: []string{"redis"}}).Dependencies[0]
	if u.InMatrix || u.Obeyed || !strings.Contains(u.Note, "not in the degradation matrix") {
		t.Errorf("redis %+v", u)
	}
}

func TestOfEstimatesTheCallsTouchedOverTheOverride(t *testing.T) {
	t.Parallel()
	src := &fakeRates{rates: screeningRates()}
	r := impact.Of(t.Context(), impact.Request{Dependencies: []string{impact.ScreeningSim}, For: 30 * time.Minute}, src)
	if src.asked.Tools[0] != impact.ToolScreenEntity || src.asked.Dependencies[0] != impact.ScreeningSim {
		t.Errorf("asked %+v", src.asked)
	}
	if src.deadline <= 0 || src.deadline > impact.DefaultTimeout {
		t.Errorf("the source's read was bounded by %s, want at most %s", src.deadline, impact.DefaultTimeout)
	}
	tool := r.Tools[0]
	if tool.CallsPerMinute == nil || *tool.CallsPerMinute != 25 || tool.Estimate == nil || tool.Estimate.Calls != 750 ||
		tool.Estimate.Text != "about 750 screenings deferred over 30m" {
		t.Fatalf("screen_entity %+v estimate %+v", tool, tool.Estimate)
	}
	if d := r.Dependencies[0]; d.CallsPerMinute == nil || *d.CallsPerMinute != 31.5 {
		t.Errorf("screening-sim's rate %v", d.CallsPerMinute)
	}
	if r.Rates == nil || r.Rates.Error != "" || r.Rates.WindowSeconds != 5 {
		t.Errorf("rates %+v", r.Rates)
	}

	forever := impact.Of(t.Context(), impact.Request{Dependencies: []string{impact.ScreeningSim}}, src)
	if e := forever.Tools[0].Estimate; e == nil || e.Text != "about 1500 screenings deferred an hour until cleared" || e.OverSeconds != 3600 {
		t.Errorf("no expiry: %+v", e)
	}
}

func TestOfStatesNoneAndFewerThanOne(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate float64
		want string
	}{
		{0, "no screenings in the window: none expected to be deferred"},
		{0.01, "fewer than 1 screening deferred over 30m"},
		{1.0 / 30, "about 1 screening deferred over 30m"},
	} {
		rates := screeningRates()
		rates.Tools[impact.ToolScreenEntity] = c.rate
		r := impact.Of(t.Context(), impact.Request{Dependencies: []string{impact.ScreeningSim}, For: 30 * time.Minute}, &fakeRates{rates: rates})
		if got := r.Tools[0].Estimate.Text; got != c.want {
			t.Errorf("rate %v: %q, want %q", c.rate, got, c.want)
		}
	}
}

func TestOfLeavesTheStaticImpactWhenTheSourceFails(t *testing.T) {
	t.Parallel()
	req := impact.Request{Dependencies: []string{impact.CoreAPI}, For: time.Hour}
	static := impact.Static(req)
	for name, src := range map[string]*fakeRates{
		"unreachable": {err: errors.New("scrape http://127.0.0.1:8787/metrics: metrics source unavailable: connection refused")},
	} {
		r := impact.Of(t.Context(), req, src)
		if r.Rates == nil || !strings.Contains(r.Rates.Error, "connection refused") {
			t.Errorf("%s: rates %+v, want the error", name, r.Rates)
		}
		for i, tool := range r.Tools {
			if tool.Behaviour != static.Tools[i].Behaviour || tool.Estimate != nil || tool.CallsPerMinute != nil {
				t.Errorf("%s: %+v, want the static %+v without rates", name, tool, static.Tools[i])
			}
		}
		var buf bytes.Buffer
		if err := r.Render(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "call rates: not read from prometheus http://127.0.0.1:8787/metrics") ||
			!strings.Contains(buf.String(), "the impact above is the matrix's alone") {
			t.Errorf("%s: rendered\n%s", name, buf.String())
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := impact.Of(ctx, req, &fakeRates{rates: screeningRates()})
	if r.Rates == nil || !strings.Contains(r.Rates.Error, "context canceled") || len(r.Tools) != len(static.Tools) {
		t.Errorf("canceled: %+v", r.Rates)
	}
}

func TestWorstBehaviourWinsAcrossDependencies(t *testing.T) {
	t.Parallel()
	r := impact.Static(impact.Request{Dependencies: []string{impact.OpenAI, impact.CoreAPI, impact.ScreeningSim}})
	got := map[string]impact.Behaviour{}
	for _, tool := range r.Tools {
		got[tool.Tool] = tool.Behaviour
	}
	want := map[string]impact.Behaviour{impact.ToolSearchKnowledgeBase: impact.Failed, impact.ToolScreenEntity: impact.Deferred,
		impact.ToolRaiseDispute: impact.Failed, impact.ToolFlagTransaction: impact.Failed, impact.ToolGetServiceHealth: impact.Unaffected}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if r.Tools[0].Because[0] != impact.CoreAPI {
		t.Errorf("search fails because of %v, want core-api (worse than openai's degradation)", r.Tools[0].Because)
	}
}

func TestRenderShowsTheTableAndEscapesNames(t *testing.T) {
	t.Parallel()
	r := impact.Of(t.Context(), impact.Request{Dependencies: []string{impact.ScreeningSim, "evil\x1b[2J"}, For: 30 * time.Minute},
		&fakeRates{rates: screeningRates()})
	var buf bytes.Buffer
	if err := r.Render(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"impact of forcing screening-sim, evil\\x1b[2J for 30m",
		"TOOL",
		`screen_entity  deferred   status: "deferred" with retry_after_s  25         about 750 screenings deferred over 30m`,
		"screening-sim: every instance fails calls to screening-sim fast once it reads the override · 31.5 calls/min",
		"evil\\x1b[2J: not in the degradation matrix",
		"call rates: prometheus http://127.0.0.1:8787/metrics, counters' increase between two scrapes 5s apart",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("an escape reached the terminal:\n%q", out)
	}
	lines := r.Lines()
	if len(lines) != 3 || lines[0] != `screen_entity deferred: no synchronous result; the request is recorded for later · client sees status: "deferred" with retry_after_s · 25/min · about 750 screenings deferred over 30m` {
		t.Errorf("lines %q", lines)
	}
}

func TestReportJSONIsTheImpactSection(t *testing.T) {
	t.Parallel()
	r := impact.Of(t.Context(), impact.Request{Dependencies: []string{impact.OpenAI}, For: 10 * time.Minute},
		&fakeRates{rates: metrics.CallRates{Source: "s", Tools: map[string]float64{impact.ToolSearchKnowledgeBase: 12}}})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tools []struct {
			Tool      string  `json:"tool"`
			Behaviour string  `json:"behaviour"`
			Calls     float64 `json:"calls_per_minute"`
			Signal    struct {
				Fields map[string]any `json:"fields"`
			} `json:"signal"`
			Estimate struct {
				Calls int `json:"calls"`
			} `json:"estimate"`
		} `json:"tools"`
		ForSeconds float64 `json:"for_seconds"`
		Rates      struct {
			Source string `json:"source"`
		} `json:"rates"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tools) != 1 || doc.Tools[0].Behaviour != "degraded" || doc.Tools[0].Calls != 12 || doc.Tools[0].Estimate.Calls != 120 ||
		doc.Tools[0].Signal.Fields["degraded_reason"] != "embeddings_unavailable" || doc.ForSeconds != 600 || doc.Rates.Source != "s" {
		t.Errorf("json %s", b)
	}
}

func TestMatrixIsACopy(t *testing.T) {
	t.Parallel()
	m := impact.Matrix()
	m[0].Effects[0].Behaviour = impact.Unaffected
	if row, _ := impact.Lookup(impact.OpenAI); row.Effects[0].Behaviour != impact.Degraded {
		t.Error("changing Matrix's result changed the matrix")
	}
}

func TestBehaviourOrder(t *testing.T) {
	t.Parallel()
	if !impact.Failed.Worse(impact.Deferred) || !impact.Deferred.Worse(impact.Degraded) || !impact.Degraded.Worse(impact.Unaffected) ||
		impact.Unaffected.Worse(impact.Unaffected) || impact.Behaviour("odd").Valid() {
		t.Error("behaviours out of order")
	}
}

// A caller with little time left (a drill step under a short timeout)
// keeps half of it for its change: the source's read gets the other half,
// and a read that takes longer leaves the matrix's impact, saying why.
func TestOfTakesAtMostHalfTheCallersTime(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
	defer cancel()
	src := &fakeRates{rates: screeningRates()}
	impact.Of(ctx, impact.Request{Dependencies: []string{impact.ScreeningSim}}, src)
	if src.deadline <= 0 || src.deadline > 2*time.Second {
		t.Errorf("the source's read was bounded by %s, want at most half of the caller's 4s", src.deadline)
	}

	// On the bubble's clock: a read that never answers ends at half the
	// caller's time, to the nanosecond.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
		defer cancel()
		start := time.Now()
		r := impact.Of(ctx, impact.Request{Dependencies: []string{impact.ScreeningSim}}, blockingRates{})
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("the read took %s of the caller's 4s, want 2s", took)
		}
		if r.Rates == nil || !strings.Contains(r.Rates.Error, "did not answer within 2s") || r.Tools[0].CallsPerMinute != nil {
			t.Errorf("rates %+v, want the matrix's impact and why", r.Rates)
		}
	})
}

// blockingRates answers only when its read's context ends.
type blockingRates struct{}

func (blockingRates) Describe() string { return "prometheus http://127.0.0.1:8787/metrics" }

func (blockingRates) Rates(ctx context.Context, _ metrics.RateRequest) (metrics.CallRates, error) {
	<-ctx.Done()
	return metrics.CallRates{}, ctx.Err()
}
