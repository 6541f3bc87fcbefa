package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// assertScreenSafe renders the model and checks it byte by byte.
func (h *harness) assertScreenSafe(what string, shown ...string) {
	h.t.Helper()
	raw := h.m.Render()
	out := sgr.ReplaceAllString(raw, "") // the view's own styling, the only control it may hold
	termtest.AssertSafe(h.t, what, out)
	for _, s := range shown {
		if !strings.Contains(out, s) {
			h.t.Errorf("%s: screen does not show %q:\n%s", what, s, out)
		}
	}
}

func TestDashboardShowsHostileStoreValuesEscaped(t *testing.T) {
	h := newHarness(t, Options{})
	const reason, actor = "x\x1b[2J\u202eok", "eve\x1b]0;t\x07"
	h.ov.mu.Lock()
	o := h.ov.items["openai"]
	o.Reason, o.Actor = reason, actor
	h.ov.items["openai"] = o
	h.ov.mu.Unlock()
	h.audit.mu.Lock()
	h.audit.records[0].Reason, h.audit.records[0].Actor = "copy\x1b]52;c;cHduZWQ=\x07", actor
	h.audit.mu.Unlock()
	h.send(tea.WindowSizeMsg{Width: 160, Height: 40})
	h.press("r")
	h.assertScreenSafe("table", `eve\x1b]0;t\x07 x\x1b[2J\u202eok`)

	h.press("down", "enter")
	h.assertScreenSafe("detail", `forced by eve\x1b]0;t\x07`, `reason: x\x1b[2J\u202eok`, `copy\x1b]52;c;cHduZWQ=\x07`)

	h.press("c")
	h.assertScreenSafe("clear prompt", `Set by eve\x1b]0;t\x07`, `x\x1b[2J\u202eok`)
	h.press("esc")

	// The reason typed in the prompt follows the one reason rule.
	h.press("esc", "f")
	h.typeText("incident\u202e")
	h.press("enter")
	h.assertScreenSafe("force prompt", `the reason has a bidi control (\u202e) at character 9`)
	if len(h.ov.forced) != 0 {
		t.Errorf("a refused reason forced: %+v", h.ov.forced)
	}

	// A pasted filter is shown escaped too.
	h.press("esc", "/")
	h.typeText("open\u202e")
	h.assertScreenSafe("filter", `/ open\u202e`)
}
