package tui

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A malformed override item (written by another tool) is flagged in the
// table, the detail and the clear prompt, and shown as the data plane reads
// it: an unreadable expiry holds the breaker until cleared.
func TestMalformedOverrideIsFlagged(t *testing.T) {
	h := newHarness(t, Options{})
	o, err := breaker.OverrideFromItem(store.Item{store.PK: "breaker#openai", "state": "forced_open", "reason": "INC-9",
		"actor": "ops@cli", "created_at": epoch.Add(-10 * 60e9).UnixMilli(), "expires_at": "tomorrow", "version": int64(3)})
	if err != nil || !o.Malformed() {
		t.Fatalf("decode: %+v, %v", o, err)
	}
	h.ov.items["openai"] = o
	h.press("r")
	if st := h.row("openai"); st.State != metrics.Forced || !st.OverrideActive {
		t.Errorf("openai = %s (active %v), want forced: a malformed expiry counts as none", st.State, st.OverrideActive)
	}
	h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	h.wantScreen("malformed! NOT OBEYED! ∞ ops INC-9")
	h.press("down", "enter")
	h.wantScreen(`malformed expires_at: found S "tomorrow", want N`, "Note", "malformed override item")
	h.press("esc", "c")
	h.wantScreen("Clear the active override of openai", "expiry unreadable, held until cleared",
		`malformed override item (expires_at: found S "tomorrow"`, "in force until cleared")
}
