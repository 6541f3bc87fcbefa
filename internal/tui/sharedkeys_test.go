package tui

import (
	"testing"
)

// TestSharedKeysPerViewAsBefore holds the keys every view shares (q, esc
// and backspace, ?, r), now handled once in handleKey, to what each view
// did with them when each handled its own: typed into a focused filter or
// prompt, they are letters; in the help view r does nothing; esc in the
// table clears the filter and stays there.
func TestSharedKeysPerViewAsBefore(t *testing.T) {
	type want struct {
		quit    bool
		mode    mode
		refresh bool
	}
	press := func(t *testing.T, h *harness, k string, w want) {
		t.Helper()
		nm, cmd := h.m.Update(keyMsg(k))
		m := nm.(Model)
		if m.quitting != w.quit {
			t.Errorf("%q: quitting = %t, want %t", k, m.quitting, w.quit)
		}
		if m.mode != w.mode {
			t.Errorf("%q: mode = %d, want %d", k, m.mode, w.mode)
		}
		if got := m.status == statusRefreshing && cmd != nil; got != w.refresh {
			t.Errorf("%q: refreshing = %t, want %t (status %q)", k, got, w.refresh, m.status)
		}
	}
	in := func(t *testing.T, md mode) *harness {
		h := newHarness(t, Options{})
		h.m.mode = md
		if md == modeDetail {
			h.m.detail.dependency = "openai"
		}
		return h
	}
	for _, c := range []struct {
		name string
		from mode
		key  string
		want want
	}{
		{"table q", modeTable, "q", want{quit: true, mode: modeTable}},
		{"table r", modeTable, "r", want{mode: modeTable, refresh: true}},
		{"table ?", modeTable, "?", want{mode: modeHelp}},
		{"table esc", modeTable, "esc", want{mode: modeTable}},
		{"detail q", modeDetail, "q", want{quit: true, mode: modeDetail}},
		{"detail r", modeDetail, "r", want{mode: modeDetail, refresh: true}},
		{"detail ?", modeDetail, "?", want{mode: modeHelp}},
		{"detail esc", modeDetail, "esc", want{mode: modeTable}},
		{"detail backspace", modeDetail, "backspace", want{mode: modeTable}},
		{"requests q", modeRequests, "q", want{quit: true, mode: modeRequests}},
		{"requests r", modeRequests, "r", want{mode: modeRequests, refresh: true}},
		{"requests ?", modeRequests, "?", want{mode: modeHelp}},
		{"requests esc", modeRequests, "esc", want{mode: modeTable}},
		{"requests backspace", modeRequests, "backspace", want{mode: modeTable}},
		{"help q", modeHelp, "q", want{quit: true, mode: modeHelp}},
		{"help r", modeHelp, "r", want{mode: modeHelp}},
		{"help ?", modeHelp, "?", want{mode: modeTable}},
		{"help esc", modeHelp, "esc", want{mode: modeTable}},
		{"help f", modeHelp, "f", want{mode: modeHelp}},
	} {
		t.Run(c.name, func(t *testing.T) { press(t, in(t, c.from), c.key, c.want) })
	}

	t.Run("filter takes q r ? as letters", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.press("/")
		h.typeText("q?r")
		if h.m.quitting || h.m.mode != modeTable || h.m.status == statusRefreshing {
			t.Errorf("typing into the filter acted: quitting %t, mode %d, status %q", h.m.quitting, h.m.mode, h.m.status)
		}
		if got := h.m.table.filter.Value(); got != "q?r" {
			t.Errorf("filter = %q, want q?r", got)
		}
	})
	t.Run("prompt takes q r ? as letters", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.press("f")
		if h.m.prompt == nil {
			t.Fatal("f opened no prompt")
		}
		h.typeText("q?r")
		if h.m.quitting || h.m.prompt == nil || h.m.status == statusRefreshing {
			t.Fatalf("typing into the prompt acted: quitting %t, prompt %v, status %q", h.m.quitting, h.m.prompt != nil, h.m.status)
		}
		if got := h.m.prompt.input.Value(); got != "q?r" {
			t.Errorf("reason = %q, want q?r", got)
		}
	})
}
