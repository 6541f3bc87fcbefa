package tui

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// fakeRates answers the fleet's call rates, counting reads.
type fakeRates struct {
	mu    sync.Mutex
	rates metrics.CallRates
	err   error
	asked []metrics.RateRequest
}

func (f *fakeRates) Describe() string { return "prometheus http://127.0.0.1:8787/metrics" }

func (f *fakeRates) Rates(_ context.Context, req metrics.RateRequest) (metrics.CallRates, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	return f.rates, f.err
}

func (f *fakeRates) reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

var _ impact.RateSource = (*fakeRates)(nil)

func withRates(h *harness) *fakeRates {
	f := &fakeRates{rates: metrics.CallRates{Source: "prometheus http://127.0.0.1:8787/metrics",
		Method: "counters' increase between two scrapes 5s apart", Window: 5 * time.Second, ReadAt: epoch,
		Tools:        map[string]float64{impact.ToolSearchKnowledgeBase: 12, impact.ToolScreenEntity: 25, impact.ToolRaiseDispute: 2},
		Dependencies: map[string]float64{"openai": 12, "screening-sim": 30}}}
	h.m.deps.Rates = f
	return f
}

// The detail of a forced dependency says what the override does to the
// tools, with the fleet's call rates and the calls touched in the time the
// override has left; the rates are read once for every dependency.
func TestDetailShowsTheImpactOfTheOverride(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 140, Height: 40})
	rates := withRates(h)
	h.press("down", "enter")
	h.wantScreen(
		"Impact     while forced (27m left), per the degradation matrix:",
		"search_knowledge_base degraded: full-text-only ranking",
		`signal: degraded: true, degraded_reason: "embeddings_unavailable"`,
		"12 calls/min · about 320 search queries degraded over 27m",
		"call rates: prometheus http://127.0.0.1:8787/metrics, counters' increase between two scrapes 5s apart, read 0s ago")
	if len(rates.asked) != 1 || !slices.Equal(rates.asked[0].Tools, impact.ToolNames()) ||
		!slices.Equal(rates.asked[0].Dependencies, []string{"openai", "core-api", "postgres", "screening-sim"}) {
		t.Errorf("rates asked %+v, want every tool and dependency once, the detail's first", rates.asked)
	}

	// Another dependency's detail uses the same read: screening-sim is not
	// forced, so its estimate is per hour.
	h.press("esc", "down", "down", "enter")
	h.wantScreen("screening-sim", "Impact     if forced (estimates per hour), per the degradation matrix:",
		"screen_entity deferred: no synchronous result; the request is recorded for later",
		"25 calls/min · about 1500 screenings deferred an hour until cleared")
	if n := rates.reads(); n != 1 {
		t.Errorf("%d rate reads, want 1: a read serves every dependency for a minute", n)
	}
	// A refresh within the minute reads none; one past it reads again.
	h.press("r")
	if n := rates.reads(); n != 1 {
		t.Errorf("%d rate reads after a refresh within the minute, want 1", n)
	}
	h.clock.Advance(RatesEvery)
	h.press("r")
	if n := rates.reads(); n != 2 {
		t.Errorf("%d rate reads after a minute, want 2", n)
	}
}

// A dependency without a breaker: nothing obeys its override, and the pane
// says what its being down would do instead.
func TestDetailSaysAnOverrideNothingObeys(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 140, Height: 40})
	h.press("down", "down", "enter") // postgres
	h.wantScreen("postgres", "no breaker in the data plane (LLD §1): no instance obeys this override",
		"when postgres itself is down: search_knowledge_base failed, raise_dispute failed,")
	h.notOnScreen("call rates") // no rate source
}

// A rate source that fails leaves the matrix's impact and says why.
func TestDetailImpactWithoutRates(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 140, Height: 40})
	rates := withRates(h)
	rates.err = errBoom
	h.press("down", "enter")
	h.wantScreen("search_knowledge_base degraded: full-text-only ranking",
		"call rates: could not read prometheus http://127.0.0.1:8787/metrics: connection refused")
	h.notOnScreen("calls/min")

	// Rates read earlier stay shown after a failed read, with the failure.
	rates.err = nil
	h.clock.Advance(RatesEvery)
	h.press("r")
	h.wantScreen("12 calls/min")
	rates.err = errBoom
	h.clock.Advance(RatesEvery)
	h.press("r")
	h.wantScreen("12 calls/min", "the last read of the call rates failed: connection refused")
}

// In a running program the impact appears once the rates are read.
func TestProgramDetailShowsTheImpact(t *testing.T) {
	h := newHarness(t, Options{})
	withRates(h)
	tm := startProgram(t, h)
	waitFor(t, tm, "screening-sim")
	tm.Send(keyMsg("down"))
	tm.Send(keyMsg("enter"))
	waitFor(t, tm, "search_knowledge_base degraded", "12 calls/min · about 320 search queries degraded over 27m")
	tm.Send(keyMsg("q"))
	finalModel(t, tm)
}
