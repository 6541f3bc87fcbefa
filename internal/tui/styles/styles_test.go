package styles_test

import (
	"strings"
	"testing"

	"charm.land/lipgloss/v2"

	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

func TestPaintMatchesTheStyle(t *testing.T) {
	for _, st := range []lipgloss.Style{
		lipgloss.NewStyle(),
		lipgloss.NewStyle().Bold(true),
		lipgloss.NewStyle().Foreground(lipgloss.Color("208")).Bold(true),
		lipgloss.NewStyle().Foreground(lipgloss.Color("15")).Background(lipgloss.Color("1")).Reverse(true),
	} {
		for _, text := range []string{"closed", "half-open ", "▁▁▆▆"} {
			if got, want := styles.NewPaint(st).Apply(text), st.Render(text); got != want {
				t.Errorf("paint %q, style %q", got, want)
			}
		}
	}
}

func TestEveryStateHasAGlyphAndNoColorMeansNoColor(t *testing.T) {
	plain, colored := styles.New(false), styles.New(true)
	for s := metrics.NoData; s <= metrics.Mixed; s++ {
		text := plain.StatePaint(s).Apply("x") + plain.State(s).Render("x")
		if strings.Contains(text, "[3") || strings.Contains(text, "[9") || strings.Contains(text, "38;") {
			t.Errorf("%s: color without color: %q", s, text)
		}
		if s != metrics.Mixed && styles.Glyphs[s] == "" {
			t.Errorf("%s has no timeline glyph", s)
		}
		if s != metrics.NoData && colored.StatePaint(s).Apply("x") == "x" {
			t.Errorf("%s is not colored in color mode", s)
		}
	}
}
