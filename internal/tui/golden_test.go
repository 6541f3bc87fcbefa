package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// Golden screens: fixed clock, fixed size, no color, escape codes removed.
// Refresh them with `go test ./internal/tui -run Golden -update`.

func TestGoldenTable(t *testing.T) {
	h := newHarness(t, Options{})
	golden.RequireEqual(t, ansi.Strip(h.m.Render()))
}

func TestGoldenProtectedForcePrompt(t *testing.T) {
	h := newHarness(t, Options{ContextName: "prod-eu", Protected: true})
	h.press("down", "down", "f")
	h.typeText("db failover INC-150")
	h.press("enter", "enter")
	golden.RequireEqual(t, ansi.Strip(h.m.Render()))
}

func TestGoldenDetail(t *testing.T) {
	h := newHarness(t, Options{})
	h.press("down", "enter")
	golden.RequireEqual(t, ansi.Strip(h.m.Render()))
}

func TestGoldenStaleGaugesWide(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 120, Height: 16})
	h.gauges.err = errBoom
	h.clock.Advance(90 * time.Second)
	h.press("r")
	golden.RequireEqual(t, ansi.Strip(h.m.Render()))
}
