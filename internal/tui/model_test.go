package tui

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

func (h *harness) screen() string { return ansi.Strip(h.m.Render()) }

func (h *harness) wantScreen(subs ...string) {
	h.t.Helper()
	s := h.screen()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			h.t.Errorf("screen lacks %q:\n%s", sub, s)
		}
	}
}

func (h *harness) wantStatus(sub string, isErr bool) {
	h.t.Helper()
	text, e := h.m.Status()
	if !strings.Contains(text, sub) || e != isErr {
		h.t.Errorf("status = %q (error %v), want %q (error %v)", text, e, sub, isErr)
	}
}

func TestLoadsBothSourcesAndMergesThem(t *testing.T) {
	h := newHarness(t, Options{})
	want := map[string][2]metrics.State{
		"core-api":      {metrics.Closed, metrics.Closed},
		"openai":        {metrics.Forced, metrics.Mixed},
		"postgres":      {metrics.Mixed, metrics.Mixed},
		"screening-sim": {metrics.NoData, metrics.NoData},
	}
	rows := h.m.Rows()
	if len(rows) != 4 {
		t.Fatalf("rows = %d", len(rows))
	}
	for _, r := range rows {
		if w := want[r.Dependency]; r.State != w[0] || r.GaugeState != w[1] {
			t.Errorf("%s: %s (gauges %s), want %s (gauges %s)", r.Dependency, r.State, r.GaugeState, w[0], w[1])
		}
	}
	if h.ov.lists != 1 || h.gauges.calls != 1 {
		t.Errorf("store reads %d, gauge fetches %d: want one each", h.ov.lists, h.gauges.calls)
	}
	h.wantScreen("context local", "store fake store 0s ago · gauges fake gauges 0s ago · every 10s",
		"openai", "forced", "27m alice provi…", "postgres", "mixed", "screening-sim", "no data", "4/4")
}

func TestOneRefreshIsOneStoreReadAndOneGaugeFetch(t *testing.T) {
	var deps []string
	for i := range 100 {
		deps = append(deps, fmt.Sprintf("dep-%03d", i))
	}
	h := newHarness(t, Options{Dependencies: deps})
	h.press("r")
	if h.ov.lists != 2 || h.gauges.calls != 2 {
		t.Errorf("after one refresh: %d store reads, %d gauge fetches; want 2 and 2", h.ov.lists, h.gauges.calls)
	}
	// The fetch asks for every known dependency and every overridden one.
	if asked := h.gauges.asked[1]; len(asked) != 101 {
		t.Errorf("the fetch asked for %d dependencies, want 101", len(asked))
	}
}

func TestRefreshTickRereadsAndSkipsReadsInFlight(t *testing.T) {
	h := newHarness(t, Options{Interval: 30 * time.Second})
	var ticks []time.Duration
	var fire func(time.Time) tea.Msg
	h.m.tick = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		ticks = append(ticks, d)
		if d == 30*time.Second {
			fire = fn
		}
		return nil
	}
	h.run(h.m.Init())
	if len(ticks) != 2 || fire == nil {
		t.Fatalf("Init scheduled %v, want the refresh interval and the one-second clock", ticks)
	}
	lists, calls := h.ov.lists, h.gauges.calls
	// A tick whose reads have not returned yet...
	nm, pending := h.m.Update(fire(epoch))
	h.m = nm.(Model)
	// ...and the next tick: nothing new may start.
	nm, second := h.m.Update(fire(epoch))
	h.m = nm.(Model)
	h.run(second)
	if h.ov.lists != lists || h.gauges.calls != calls {
		t.Errorf("a tick started reads while others were in flight: %d/%d -> %d/%d", lists, calls, h.ov.lists, h.gauges.calls)
	}
	h.run(pending)
	if h.ov.lists != lists+1 || h.gauges.calls != calls+1 {
		t.Errorf("the tick did not reread both sources")
	}
	if n := len(ticks); n != 4 {
		t.Errorf("each tick reschedules exactly one tick; scheduled %v", ticks)
	}
}

// Issue 45: the fix at the end of a metrics error was cut at the
// terminal's width. The banner wraps, so the fix is read whole; only an
// error longer than a third of the screen is cut.
func TestAMetricsErrorShowsItsFixWhole(t *testing.T) {
	h := newHarness(t, Options{})
	h.gauges.err = fmt.Errorf("scrape http://127.0.0.1:8787/metrics: metrics source unavailable: the answer is too large "+
		"(more than the 16 MiB koshactl reads of one scrape): point the metrics URL at an endpoint that serves fewer series, "+
		"such as a Prometheus server's /federate?match[]=kosha_breaker_state (--metrics-url, or the context's metrics.prometheus.url): %w", errBoom)
	h.press("r")
	screen := h.screen()
	flat := strings.Join(strings.Fields(screen), " ")
	for _, want := range []string{"/federate?match[]=kosha_breaker_state", "(--metrics-url, or the context's metrics.prometheus.url)",
		"connection refused (fake gauges)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the screen does not show %q:\n%s", want, screen)
		}
	}
	for _, l := range strings.Split(screen, "\n") {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("a line is %d cells wide, more than the screen's 80: %q", w, l)
		}
	}
	// A short screen gives the banner a third of its lines, and says it cut.
	h.send(tea.WindowSizeMsg{Width: 60, Height: 12})
	if s := h.screen(); !strings.Contains(s, "…") || strings.Count(s, "fake gauges") != 0 {
		t.Errorf("on 60x12 the banner should be cut to 4 lines, with …:\n%s", s)
	}
}

func TestAFailingSourceKeepsItsLastDataMarkedStale(t *testing.T) {
	h := newHarness(t, Options{})
	h.gauges.err = fmt.Errorf("scrape http://127.0.0.1:8787/metrics: %w", errBoom)
	h.clock.Advance(2 * time.Minute)
	h.press("r")
	if st := h.row("postgres"); st.State != metrics.Mixed {
		t.Errorf("postgres = %s after a failed fetch, want its last known state", st.State)
	}
	// Narrow, the banner wraps: the error's end is shown, not cut.
	h.wantScreen("gauges STALE 2m", "✗ gauges failed, showing data from 2m ago: scrape", "connection refused (fake gauges)")
	h.send(tea.WindowSizeMsg{Width: 160, Height: 24})
	h.wantScreen("✗ gauges failed, showing data from 2m ago: scrape http://127.0.0.1:8787/metrics: connection refused (fake gauges)")
	if text, _ := h.m.Status(); text != "" {
		t.Errorf("status %q stayed after the refresh returned", text)
	}
	h.gauges.err = nil
	h.press("r")
	if s := h.screen(); strings.Contains(s, "✗") || strings.Contains(s, "STALE") {
		t.Errorf("the banner stayed after recovery:\n%s", s)
	}
}

func TestTheGaugesBannerCarriesTheHint(t *testing.T) {
	h := newHarness(t, Options{GaugesHint: "is the sandbox running? start it with koshactl sandbox"})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 24})
	h.gauges.err = errBoom
	h.press("r")
	h.wantScreen("✗ gauges failed, showing data from 0s ago (is the sandbox running? start it with koshactl sandbox): connection refused")
	h.ov.listErr = errBoom
	h.press("r")
	if strings.Contains(strings.SplitN(h.screen(), "✗ gauges", 2)[0], "sandbox") {
		t.Error("the hint was added to the store's banner")
	}
}

func TestASourceFailingFromTheStartSaysSo(t *testing.T) {
	h := newHarness(t, Options{})
	h.ov.listErr = errBoom
	h.m.store = source{loading: true}
	h.m.overrides = nil
	h.run(h.m.loadOverrides())
	h.wantScreen("store FAILED", "✗ store failed, no data yet: connection refused (fake store)")
}

func TestForceOpenFromTheTable(t *testing.T) {
	h := newHarness(t, Options{})
	if h.m.Selected() != "core-api" {
		t.Fatalf("selected %q", h.m.Selected())
	}
	h.press("f")
	h.wantScreen("Force core-api open across the fleet · context local", "Reason:")
	h.press("enter")
	h.wantScreen("a reason is required")
	h.typeText("failover drill")
	h.press("enter")
	h.wantScreen("Reason:   failover drill", "Duration: 1h", "at most 24h")
	h.press("backspace", "backspace")
	h.typeText("30m")
	h.press("enter")
	if len(h.ov.forced) != 1 {
		t.Fatalf("force calls = %d", len(h.ov.forced))
	}
	if got, want := h.ov.forced[0], (ForceRequest{Dependency: "core-api", Reason: "failover drill", For: 30 * time.Minute}); got != want {
		t.Errorf("force request = %+v, want %+v", got, want)
	}
	h.wantStatus("core-api forced open for 30m — reason: failover drill", false)
	if st := h.row("core-api"); st.State != metrics.Forced || !st.OverrideActive {
		t.Errorf("core-api after force = %s (override active %v)", st.State, st.OverrideActive)
	}
	if h.ov.lists != 2 {
		t.Errorf("the store was not reread after the change")
	}
}

// With WaitFleet a lever waits for the gauges (metrics.Waiter) and says
// what they confirmed; a wait that runs out says who did not obey.
func TestLeverWaitsForTheFleet(t *testing.T) {
	h := newHarness(t, Options{WaitFleet: true})
	h.gauges.live = true
	h.gauges.set("core-api", 3, 3, 3, 3) // the fleet obeys at once
	h.press("f")
	h.typeText("failover drill")
	h.press("enter", "enter")
	h.wantStatus("core-api: the fleet confirmed it, forced on 4 of 4 instances after 0s", false)

	text, isErr, ok := fleetResult(fleetMsg{err: metrics.ErrNotConfirmed, res: metrics.WaitResult{Timeout: 11 * time.Second,
		Convergences: []metrics.Convergence{{Change: metrics.Change{Dependency: "openai", Goal: metrics.GoalForced}, Verdict: metrics.NotObeyed,
			PerInstance: true, Instances: 4, Confirmed: 3, Stragglers: []string{"gw-3"}}}}})
	if !ok || !isErr || text != "openai: the fleet did NOT confirm it within 11s: forced on 3 of 4 instances, not obeyed (not forced: gw-3)" {
		t.Errorf("timed-out wait reads %q (error %v)", text, isErr)
	}
}

func TestForceDurationIsValidated(t *testing.T) {
	for in, want := range map[string]string{
		"90":   `"90" is not a duration`,
		"48h":  "48h is over this context's max-override of 24h",
		"2d":   "2d is over this context's max-override of 24h", // the form the dashboard writes reads back
		"-5m":  "the duration must be positive",
		"1ns":  "1ns is under the 5s minimum",
		"4s":   "4s is under the 5s minimum",
		"soon": `"soon" is not a duration`,
	} {
		t.Run(in, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.press("f")
			h.typeText("drill")
			h.press("enter", "backspace", "backspace")
			h.typeText(in)
			h.press("enter")
			h.wantScreen(want)
			if len(h.ov.forced) != 0 {
				t.Error("forced despite an invalid duration")
			}
		})
	}
}

func TestProtectedContextNeedsTheTypedName(t *testing.T) {
	h := newHarness(t, Options{ContextName: "prod-eu", Protected: true})
	h.wantScreen("PROTECTED CONTEXT prod-eu")
	h.press("f")
	h.typeText("provider down")
	h.press("enter", "enter")
	h.wantScreen(`PROTECTED context: type "prod-eu" to confirm:`)
	h.typeText("prod")
	h.press("enter")
	h.wantScreen(`that is not "prod-eu"`)
	if len(h.ov.forced) != 0 {
		t.Fatal("forced without the context name")
	}
	h.typeText("-eu")
	h.press("enter")
	if len(h.ov.forced) != 1 {
		t.Fatal("not forced after the context name was typed")
	}
	// Clear asks for the name too.
	h.press("c")
	h.press("enter")
	h.wantScreen(`type "prod-eu" to confirm`)
	h.press("enter")
	if len(h.ov.cleared) != 0 {
		t.Error("cleared with an empty confirmation")
	}
	h.typeText("prod-eu")
	h.press("enter")
	if len(h.ov.cleared) != 1 {
		t.Error("not cleared after the name was typed")
	}
}

func TestEscapeCancelsAPromptAndChangesNothing(t *testing.T) {
	h := newHarness(t, Options{})
	h.press("f")
	h.typeText("oops")
	h.press("esc")
	if len(h.ov.forced) != 0 {
		t.Error("forced after esc")
	}
	h.wantStatus("canceled: nothing was changed", false)
	// The table is back and keys act again.
	h.press("down")
	if h.m.Selected() != "openai" {
		t.Errorf("selected %q after esc and down", h.m.Selected())
	}
}

func TestForcingAForcedDependencyReplacesOnlyTheOverrideShown(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 140, Height: 30})
	h.press("down", "f")
	h.wantScreen("This REPLACES the active override by alice@laptop (expires in 27m): provider incident INC-142")
	h.typeText("extend")
	h.press("enter", "enter")
	if got := h.ov.forced[0].Replace; got == nil || got.Version != 1 {
		t.Fatalf("replace = %+v, want the version shown (1)", got)
	}
	h.wantStatus("openai override replaced, forced open for 1h", false)

	// Someone else changes it while the prompt is open: conflict, no write.
	h.press("f")
	h.ov.mu.Lock()
	o := h.ov.items["openai"]
	o.Version, o.Actor = 9, "bob@laptop"
	h.ov.items["openai"] = o
	h.ov.mu.Unlock()
	h.typeText("again")
	h.press("enter", "enter")
	h.wantStatus("not forced: openai is already forced open by bob@laptop", true)
	if cur, _ := h.ov.get("openai"); cur.Version != 9 {
		t.Errorf("the other operator's override was replaced: %+v", cur)
	}
}

func TestClearFromTheTable(t *testing.T) {
	h := newHarness(t, Options{})
	h.press("c")
	h.wantStatus("core-api has no override to clear", false)
	if len(h.ov.cleared) != 0 || h.m.prompt != nil {
		t.Error("a clear prompt opened on a dependency without override")
	}
	h.press("down", "c")
	h.wantScreen("Clear the active override of openai · context local",
		"Set by alice@laptop 3m ago (expires in 27m): provider incident INC-142", "enter: CLEAR")
	h.typeText("provider recovered")
	h.press("enter")
	if len(h.ov.cleared) != 1 || h.ov.cleared[0] != "openai" {
		t.Fatalf("cleared = %v", h.ov.cleared)
	}
	h.wantStatus("openai cleared", false)
	if st := h.row("openai"); st.State != metrics.Mixed || st.Override != nil {
		t.Errorf("openai after clear = %s, override %v; want the gauges' state", st.State, st.Override)
	}
}

// The row follows a force or clear as soon as its answer arrives, not only
// after the reread it triggers: the status line and the table never disagree.
func TestTheRowFollowsTheActionBeforeTheReread(t *testing.T) {
	h := newHarness(t, Options{})
	after := breaker.Override{Dependency: "core-api", State: breaker.OverrideStateForcedOpen, Reason: "failover drill",
		Actor: "tester", CreatedAt: epoch, ExpiresAt: epoch.Add(time.Hour), Version: 1}
	nm, _ := h.m.Update(forcedMsg{req: ForceRequest{Dependency: "core-api", Reason: "failover drill", For: time.Hour},
		rep: written("core-api", breaker.ForceResult{After: after}, false)})
	h.m = nm.(Model) // the reread it returns is not run
	if st := h.row("core-api"); st.State != metrics.Forced || !st.OverrideActive {
		t.Errorf("core-api right after the force = %s (override active %v)", st.State, st.OverrideActive)
	}
	if st := h.row("openai"); st.Override == nil {
		t.Error("forcing core-api dropped openai's override from the table")
	}
	nm, _ = h.m.Update(clearedMsg{dependency: "core-api", rep: written("core-api", breaker.ClearResult{Before: &after, WasActive: true}, false)})
	h.m = nm.(Model)
	if st := h.row("core-api"); st.Override != nil || st.State == metrics.Forced {
		t.Errorf("core-api right after the clear = %s, override %v", st.State, st.Override)
	}
	nm, _ = h.m.Update(forcedMsg{req: ForceRequest{Dependency: "postgres", Reason: "x", For: time.Hour},
		err: errors.New("store unavailable")})
	h.m = nm.(Model)
	if st := h.row("postgres"); st.Override != nil {
		t.Errorf("a failed force shows an override: %+v", st.Override)
	}
}

func TestActionFailuresAreReportedHonestly(t *testing.T) {
	h := newHarness(t, Options{})
	h.ov.forceErr = fmt.Errorf("force-open core-api: %w: check with koshactl breaker get core-api", store.ErrOutcomeUnknown)
	h.press("f")
	h.typeText("drill")
	h.press("enter", "enter")
	h.wantStatus("force-open core-api: the outcome is unknown, look at the row once the store answers", true)

	h.ov.forceErr = errBoom
	h.press("f")
	h.typeText("drill")
	h.press("enter", "enter")
	h.wantStatus("force-open core-api failed, nothing was changed: connection refused", true)

	h.ov.clearErr = errBoom
	h.press("down", "c", "enter")
	h.wantStatus("clear openai failed, nothing was changed: connection refused", true)
}

// A write whose first response was lost and which the domain's re-read
// resolved says so in the status line, with the sentence the CLI prints.
func TestLostAnswersResolvedByARereadSaySoInTheStatusLine(t *testing.T) {
	h := newHarness(t, Options{})
	h.ov.lostAnswer = true
	h.press("f")
	h.typeText("drill")
	h.press("enter", "enter")
	h.wantStatus("core-api forced open for 1h — reason: drill ("+store.ConfirmedNote+")", false)

	h.press("c", "enter")
	h.wantStatus("core-api cleared: instances follow their own breakers again within 5 s ("+store.ConfirmedNote+")", false)

	h.ov.lostAnswer = false
	h.press("f")
	h.typeText("drill")
	h.press("enter", "enter")
	if text, _ := h.m.Status(); strings.Contains(text, store.ConfirmedNote) {
		t.Errorf("a write whose answer came says it was confirmed by a re-read: %q", text)
	}
}

func TestFilterByNameOrState(t *testing.T) {
	h := newHarness(t, Options{})
	h.press("/")
	h.typeText("post")
	if rows := h.visible(); strings.Join(rows, ",") != "postgres" {
		t.Errorf("visible = %v", rows)
	}
	h.press("enter")
	h.wantScreen("filter: post (1 of 4) · esc clears")
	h.press("esc")
	if len(h.visible()) != 4 {
		t.Errorf("esc did not clear the filter: %v", h.visible())
	}
	h.press("/")
	h.typeText("no data")
	if rows := h.visible(); strings.Join(rows, ",") != "screening-sim" {
		t.Errorf("state filter: visible = %v", rows)
	}
	if h.m.Selected() != "screening-sim" {
		t.Errorf("the selection did not follow the filter: %q", h.m.Selected())
	}
	h.press("esc")
	h.press("/")
	h.typeText("zzz")
	h.press("enter")
	h.wantScreen(`no dependency matches "zzz"`)
	h.press("f") // nothing selected: no prompt
	if h.m.prompt != nil {
		t.Error("a prompt opened with nothing selected")
	}
}

func (h *harness) visible() []string {
	var out []string
	for _, i := range h.m.table.visible {
		out = append(out, h.m.rows[i].Dependency)
	}
	return out
}

func TestScreenFitsAndScrolls(t *testing.T) {
	var deps []string
	for i := range 200 {
		deps = append(deps, fmt.Sprintf("dep-%03d", i))
	}
	h := newHarness(t, Options{Dependencies: deps})
	for _, size := range [][2]int{{80, 24}, {120, 40}, {60, 15}, {200, 50}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		lines := strings.Split(h.m.Render(), "\n")
		if len(lines) != size[1] {
			t.Errorf("%dx%d: %d lines", size[0], size[1], len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%dx%d: line %d is %d wide: %q", size[0], size[1], i, w, ansi.Strip(l))
			}
		}
	}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.press("G")
	if h.m.Selected() != "postgres" {
		t.Errorf("G selected %q, want the last row", h.m.Selected())
	}
	h.wantScreen("› postgres")
	if strings.Contains(h.screen(), "dep-000") {
		t.Error("the first row is still on screen after G")
	}
	h.press("g")
	h.wantScreen("› core-api", "dep-000")
	h.send(tea.WindowSizeMsg{Width: 30, Height: 8})
	h.wantScreen("least 40x10 (now 30x8)")
}

func TestDetailShowsTheFleetAndTheAuditTrail(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	h.press("down", "enter")
	h.wantScreen("openai · forced (override) · gauges: mixed",
		"forced by alice@laptop 3m ago · expires in 27m (19:27:30Z)", "reason: provider incident INC-142",
		"worst forced · best open · 4/4 instances reporting", "3 forced", "1 open",
		"Fleet      converging: forced on 3 of 4 instances (not yet: gw-4)",
		"Instances (4)", "gw-4", "Recent audit", "force-open  alice@laptop  provider incident INC-142",
		"clear       bob@laptop    recovered")
	if q := h.audit.queries; len(q) != 1 || q[0].Subject != "breaker#openai" || q[0].Limit != AuditRecords {
		t.Errorf("audit queries = %+v", q)
	}
	// At 80x23 the detail scrolls.
	h.send(tea.WindowSizeMsg{Width: 80, Height: 23})
	h.wantScreen("↓ 6 more lines (j/k scroll)")
	h.press("j", "j", "j", "j", "j", "j", "j")
	h.wantScreen("clear       bob@laptop    recovered")
	h.press("esc")
	h.wantScreen("DEPENDENCY", "screening-sim")
	h.audit.err = errBoom
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	h.press("enter")
	h.wantScreen("could not read the audit log: connection refused")
}

// On a source that bills per instance series (CloudWatch), the table asks
// for no breakdown, and the detail view for its own dependency's only, at
// once when it opens.
func TestOnlyTheDetailViewAsksForABreakdown(t *testing.T) {
	h := newHarness(t, Options{})
	h.gauges.perInstanceCost = true
	h.press("r")
	h.wantScreen("postgres", "~4")
	last := func() metrics.FetchRequest { return h.gauges.requests[len(h.gauges.requests)-1] }
	if r := last(); len(r.Instances) != 0 || r.AllInstances {
		t.Errorf("the table's fetch asked for breakdowns: %+v", r)
	}
	calls := h.gauges.callCount()
	h.press("down", "enter")
	if h.gauges.callCount() != calls+1 || !slices.Equal(last().Instances, []string{"openai"}) {
		t.Errorf("opening the detail: %d fetches, last %+v; want one more, for openai's breakdown", h.gauges.callCount()-calls, last())
	}
	h.wantScreen("openai · forced (override)", "4/4 instances reporting", "Instances (4)")
	h.press("r")
	if !slices.Equal(last().Instances, []string{"openai"}) {
		t.Errorf("refresh in the detail view asked %+v", last())
	}
	h.press("esc", "r")
	if r := last(); len(r.Instances) != 0 {
		t.Errorf("back in the table the fetch still asks %+v", r)
	}
}

// A fleet of hundreds widens the INST column instead of pushing the
// override out of line, and a partial breakdown is marked "+".
func TestInstanceCountsOfALargeFleetStayInTheirColumn(t *testing.T) {
	h := newHarness(t, Options{})
	big := make([]float64, 300)
	big[299] = 2
	h.gauges.set("postgres", big...)
	h.press("r")
	lines := strings.Split(h.screen(), "\n")
	var head, row string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "DEPENDENCY"):
			head = l
		case strings.Contains(l, "postgres"):
			row = l
		}
	}
	if !strings.Contains(row, " 300/300 ") {
		t.Fatalf("postgres row %q lacks 300/300", row)
	}
	if at := strings.Index(head, "OVERRIDE"); at < 0 || strings.Index(row, "300/300")+len("300/300 ") != at {
		t.Errorf("INST column not widened:\n%s\n%s", head, row)
	}
	for g, want := range map[*metrics.Gauges]string{
		{Known: 499, Reporting: 199, Breakdown: metrics.BreakdownPartial}: "199/499+",
		{Known: 3, Reporting: 3}: "3/3",
		{HasData: true, Samples: 300, Breakdown: metrics.BreakdownNotFetched}: "~300",
		{}: "-",
	} {
		if got := instCell(*g); got != want {
			t.Errorf("instCell(%+v) = %q, want %q", *g, got, want)
		}
	}
}

func TestHelpAndQuit(t *testing.T) {
	h := newHarness(t, Options{})
	h.press("?")
	h.wantScreen("Keys", "force-open", "States", "never an average")
	h.press("?")
	h.wantScreen("DEPENDENCY")
	h.press("q")
	if !h.m.Quitting() {
		t.Error("q did not quit")
	}
	h = newHarness(t, Options{})
	h.press("f")
	h.typeText("q") // typed into the prompt, not a quit
	if h.m.Quitting() {
		t.Error("q in a prompt quit")
	}
	h.press("ctrl+c")
	if !h.m.Quitting() {
		t.Error("ctrl+c in a prompt did not quit")
	}
}

func TestOverrideExpiryChangesTheStateWithoutARead(t *testing.T) {
	h := newHarness(t, Options{})
	lists := h.ov.lists
	h.clock.Advance(26 * time.Minute)
	h.send(clockTickMsg{})
	if st := h.row("openai"); st.State != metrics.Forced {
		t.Fatalf("openai = %s before expiry", st.State)
	}
	h.clock.Advance(2 * time.Minute)
	h.send(clockTickMsg{})
	if st := h.row("openai"); st.State != metrics.Mixed || st.OverrideActive {
		t.Errorf("openai = %s after its override expired, want the gauges' state", st.State)
	}
	if h.ov.lists != lists {
		t.Error("the clock tick read the store")
	}
	h.wantScreen("expired alice")
}

var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// hasColor reports whether s sets a foreground or background color.
func hasColor(s string) bool {
	for _, m := range sgr.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			n, err := strconv.Atoi(p)
			if err != nil {
				continue // the pattern only lets digits through: an overflow at worst, which is no color
			}
			if (n >= 30 && n <= 49 && n != 39 && n != 49) || (n >= 90 && n <= 107) {
				return true
			}
		}
	}
	return false
}

func TestNoColorMeansNoColor(t *testing.T) {
	for _, color := range []bool{false, true} {
		h := newHarness(t, Options{Color: color, Protected: true, ContextName: "prod"})
		screens := []string{h.m.Render()}
		h.press("down", "enter")
		screens = append(screens, h.m.Render())
		h.press("esc", "f")
		screens = append(screens, h.m.Render())
		for i, s := range screens {
			if hasColor(s) != color {
				t.Errorf("color %v, screen %d: color codes present = %v", color, i, !color)
			}
		}
	}
}

func TestStripShowsTheWorstStateOfEachCell(t *testing.T) {
	periods := make([]metrics.State, 60)
	for i := range periods {
		periods[i] = metrics.Closed
		if i >= 50 {
			periods[i] = metrics.Open
		}
	}
	periods[0] = metrics.NoData
	st := New(Deps{}, Options{}).styles
	strip := func(p []metrics.State, w int, st styles.Styles) string { return ansi.Strip(strip(p, w, st)) }
	if got, want := strip(periods, 60, st), "·"+strings.Repeat("▁", 49)+strings.Repeat("▆", 10); got != want {
		t.Errorf("60 cells:\n%s\n%s", got, want)
	}
	// 20 cells of 3 minutes: the cell holding minute 50 is open already.
	if got, want := strip(periods, 20, st), strings.Repeat("▁", 16)+strings.Repeat("▆", 4); got != want {
		t.Errorf("20 cells:\n%s\n%s", got, want)
	}
	if got := strip(periods, 100, st); ansi.StringWidth(got) != 100 || !strings.HasPrefix(got, strings.Repeat(" ", 40)+"·") {
		t.Errorf("wide strip = %q", got)
	}
	periods[55] = metrics.Forced
	if got := strip(periods, 6, st); got != "▁▁▁▁▁█" {
		t.Errorf("6 cells = %q", got)
	}
}

func TestShortActor(t *testing.T) {
	for in, want := range map[string]string{
		"arn:aws:sts::123456789012:assumed-role/Oncall/alice": "alice",
		"alice@laptop": "alice", "ci-bot": "ci-bot", "arn:aws:iam::1:root": "arn:aws:iam::1:root",
	} {
		if got := shortActor(in); got != want {
			t.Errorf("shortActor(%q) = %q, want %q", in, got, want)
		}
	}
}

// The header shows a levers file's current and next windows (the lines
// the levers domain words), escaped, at most three lines.
func TestTheHeaderShowsPlannedWindows(t *testing.T) {
	var asked time.Time
	lines := []string{"postgres in force until 19:30Z: RDS upgrade \x1b[31m (pg-1)", "openai 2026-12-09T05:00Z to 05:45Z: maintenance (oa)",
		"core-api a", "core-api b"}
	h := newHarness(t, Options{Windows: func(now time.Time) []string { asked = now; return lines }})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 24})
	h.wantScreen("window postgres in force until 19:30Z: RDS upgrade \\x1b[31m (pg-1)", "window openai 2026-12-09T05:00Z to 05:45Z: maintenance (oa)",
		"window (+2 more windows: koshactl diff)")
	if strings.Contains(h.screen(), "core-api a") || !asked.Equal(h.m.now) {
		t.Errorf("windows asked at %s (now %s); screen:\n%s", asked, h.m.now, h.screen())
	}
}
