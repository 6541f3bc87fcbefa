package tui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// The dashboard's header names the fleet's freeze while it holds, read in
// the overrides' own batch: who, the reference, since and until when, why;
// a value from the table reaches the screen rendered safe. Once lifted,
// the banner is gone.
func TestHeaderBannerWhileFrozen(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clocktest.NewFake(epoch)
	log := audit.NewLog(st, clk, "local")
	freezetest.Set(t, st, log, "alice@laptop", "payments failing\x1b[2J", "INC-7", epoch.Add(-time.Minute), time.Hour)

	m := New(Deps{Overrides: StoreOverrides{Overrides: breaker.NewOverrides(st, clk), Known: []string{"openai"}}, Gauges: &fakeGauges{clock: clk}},
		Options{ContextName: "local", StoreName: "sqlite", Clock: clk, Dependencies: []string{"openai"}})
	m.tick = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	h := &harness{t: t, clock: clk, m: m}
	h.send(tea.WindowSizeMsg{Width: 200, Height: 24})
	h.run(h.m.Init())
	raw := h.m.Render()
	if strings.Contains(raw, "\x1b[2J") {
		t.Error("the freeze's reason reached the screen unescaped")
	}
	h.wantScreen("FROZEN", "frozen by alice@laptop (INC-7)", "until 2026-11-29T19:59:30Z", "payments failing")

	freezetest.Lift(t, st, log, "bob@laptop", "not us", epoch)
	clk.Advance(time.Second)
	h.press("r")
	if s := ansi.Strip(h.m.Render()); strings.Contains(s, "FROZEN") {
		t.Errorf("the banner stays after the lift:\n%s", s)
	}
}
