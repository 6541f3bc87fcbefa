package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

// The detail of openai has 24 lines; at 80x23 the pane shows 19 of them.
const openaiTitle = "openai · forced (override) · gauges: mixed"

func (h *harness) notOnScreen(subs ...string) {
	h.t.Helper()
	s := h.screen()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			h.t.Errorf("screen shows %q:\n%s", sub, s)
		}
	}
}

// openScrolledToBottom opens openai's detail at 80x23 and presses j past
// the end: the pane stops at its last line.
func openScrolledToBottom(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 80, Height: 23})
	h.press("down", "enter")
	h.wantScreen(openaiTitle, "↓ 6 more lines (j/k scroll)")
	h.press("j", "j", "j", "j", "j", "j", "j", "j", "j", "j")
	h.wantScreen("clear       bob@laptop    recovered")
	h.notOnScreen(openaiTitle, "more lines")
	return h
}

func TestDetailScrollStopsAtTheLastLine(t *testing.T) {
	h := openScrolledToBottom(t)
	// One step up from the bottom, not ten: the presses past the end
	// were not counted.
	h.press("k")
	h.wantScreen("↓ 2 more lines (j/k scroll)")
	h.notOnScreen(openaiTitle)
	h.press("k", "k", "k", "k")
	h.wantScreen(openaiTitle, "↓ 6 more lines (j/k scroll)")
}

// A taller screen leaves less to scroll: the offset moves back to the new
// last position at once, so the next k scrolls (it used to be spent on an
// offset past the end).
func TestDetailResizeKeepsTheOffsetValid(t *testing.T) {
	h := openScrolledToBottom(t)
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.wantScreen("clear       bob@laptop    recovered")
	h.notOnScreen(openaiTitle, "more lines")
	h.press("k", "k", "k", "k")
	h.wantScreen(openaiTitle, "↓ 5 more lines (j/k scroll)")
	// A screen that holds everything has nothing to scroll.
	h.send(tea.WindowSizeMsg{Width: 100, Height: 40})
	h.press("j")
	h.wantScreen(openaiTitle, "clear       bob@laptop    recovered")
	h.send(tea.WindowSizeMsg{Width: 80, Height: 23})
	h.wantScreen(openaiTitle, "↓ 6 more lines (j/k scroll)")
}

// Content that shrinks under the offset (the audit read fails on a
// refresh: one line instead of two records) keeps the offset valid too.
func TestDetailShorterContentKeepsTheOffsetValid(t *testing.T) {
	h := openScrolledToBottom(t)
	h.audit.err = errBoom
	h.press("r")
	h.wantScreen("could not read the audit log: connection refused")
	h.notOnScreen(openaiTitle, "more lines")
	h.press("k", "k", "k", "k")
	h.wantScreen(openaiTitle, "↓ 5 more lines (j/k scroll)")
}

// At every size the detail fits the screen, and scrolled to the end its
// last line is the oldest audit record.
func TestDetailFitsEverySize(t *testing.T) {
	h := newHarness(t, Options{})
	h.press("down", "enter")
	for _, size := range [][2]int{{80, 24}, {40, 10}, {120, 40}, {60, 15}, {200, 50}, {80, 23}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for range 30 {
			h.press("j")
		}
		lines := strings.Split(h.m.Render(), "\n")
		if len(lines) != size[1] {
			t.Errorf("%dx%d: %d lines", size[0], size[1], len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%dx%d: line %d is %d wide: %q", size[0], size[1], i, w, ansi.Strip(l))
			}
		}
		body := strings.TrimRight(ansi.Strip(strings.Join(lines[:len(lines)-2], "\n")), "\n")
		if last := body[strings.LastIndexByte(body, '\n')+1:]; !strings.HasPrefix(last, "  11-28 17:00Z  clear") {
			t.Errorf("%dx%d: scrolled to the end, the pane ends with %q", size[0], size[1], last)
		}
	}
}

// A data-plane record in a dependency's recent audit is marked as the
// data plane's, as audit list marks it: never read as an operator's change.
func TestDetailMarksDataPlaneRecords(t *testing.T) {
	p := detailPane{dependency: "openai", records: []audit.Record{
		{Time: epoch, Actor: "arn:aws:iam::123456789012:user/alice", Action: "breaker.clear", Reason: "planted", DataPlane: true},
		{Time: epoch, Actor: "arn:aws:iam::123456789012:user/bob", Action: "breaker.force-open", Reason: "real"},
	}}
	lines := p.auditLines(styles.New(false), time.Time{})
	got := strings.Join(lines, "\n")
	for _, l := range lines {
		if strings.Contains(l, "planted") != strings.Contains(l, "(data plane)") {
			t.Errorf("line %q: the data plane's record alone is marked\n%s", l, got)
		}
	}
}
