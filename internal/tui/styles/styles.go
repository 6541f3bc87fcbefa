// Package styles provides every lipgloss style of the dashboard in one place,
// in a color and a colorless (NO_COLOR) variant. Color is never the only
// signal: every state also has a text label and a timeline glyph.
package styles

import (
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Styles are the dashboard's styles.
type Styles struct {
	// Color reports whether the styles use color.
	Color bool

	Title, Dim, ColumnHeader, Selected lipgloss.Style
	// Protected is the banner of a protected context.
	Protected lipgloss.Style
	// ErrorBanner marks a failing source; Warning a partial one.
	ErrorBanner, Warning lipgloss.Style
	// StatusOK and StatusError style the one-line result of an action.
	StatusOK, StatusError lipgloss.Style
	// Box frames a prompt; Label names a prompt field.
	Box, Label        lipgloss.Style
	HelpKey, HelpDesc lipgloss.Style
	// SelectedPaint and DimPaint are Selected and Dim as paints.
	SelectedPaint, DimPaint Paint

	states [metrics.Mixed + 1]lipgloss.Style
	paints [metrics.Mixed + 1]Paint
}

// Paint applies a simple inline style (colors, bold, reverse) by
// concatenation: the escape sequences a lipgloss style writes before and
// after its text, computed once. Rendering hundreds of cells a frame through
// lipgloss costs milliseconds; a Paint costs a string concatenation.
type Paint struct{ pre, post string }

// marker is a private-use character no style alters.
const marker = "\uE000"

// NewPaint derives the paint of style. The style must be inline: no width,
// padding, margin, border or alignment.
func NewPaint(style lipgloss.Style) Paint {
	pre, post, _ := strings.Cut(style.Render(marker), marker)
	return Paint{pre: pre, post: post}
}

// Apply paints s.
func (p Paint) Apply(s string) string {
	if p.pre == "" && p.post == "" {
		return s
	}
	return p.pre + s + p.post
}

// Palette (ANSI 16-color indexes, so terminals theme them).
var (
	green   = lipgloss.Color("2")
	yellow  = lipgloss.Color("3")
	red     = lipgloss.Color("1")
	magenta = lipgloss.Color("5")
	orange  = lipgloss.Color("208")
	gray    = lipgloss.Color("8")
	white   = lipgloss.Color("15")
)

// New returns the styles, colored or not.
func New(colored bool) Styles {
	s := Styles{Color: colored}
	plain := lipgloss.NewStyle()
	s.Title = plain.Bold(true)
	s.ColumnHeader = plain.Bold(true)
	s.Selected = plain.Bold(true)
	s.Label = plain.Bold(true)
	s.HelpKey = plain.Bold(true)
	s.HelpDesc = plain
	s.Box = plain.Border(lipgloss.NormalBorder()).Padding(0, 1)
	if !colored {
		s.Dim = plain
		s.Protected = plain.Bold(true).Reverse(true)
		s.ErrorBanner = plain.Bold(true)
		s.Warning = plain
		s.StatusOK = plain
		s.StatusError = plain.Bold(true)
		for i := range s.states {
			s.states[i] = plain
		}
		s.states[metrics.Open] = plain.Bold(true)
		s.states[metrics.Forced] = plain.Bold(true)
		s.states[metrics.Mixed] = plain.Bold(true)
		return s.withPaints()
	}
	fg := func(c color.Color) lipgloss.Style { return plain.Foreground(c) }
	s.Dim = fg(gray)
	s.Protected = plain.Bold(true).Foreground(white).Background(red)
	s.ErrorBanner = plain.Bold(true).Foreground(white).Background(red)
	s.Warning = fg(yellow)
	s.StatusOK = fg(green)
	s.StatusError = fg(red).Bold(true)
	s.Box = s.Box.BorderForeground(gray)
	s.HelpKey = fg(gray).Bold(true)
	s.HelpDesc = fg(gray)
	s.states[metrics.NoData] = fg(gray)
	s.states[metrics.Closed] = fg(green)
	s.states[metrics.HalfOpen] = fg(yellow)
	s.states[metrics.Open] = fg(red).Bold(true)
	s.states[metrics.Forced] = fg(magenta).Bold(true)
	s.states[metrics.Mixed] = fg(orange).Bold(true)
	return s.withPaints()
}

func (s Styles) withPaints() Styles {
	for i, st := range s.states {
		s.paints[i] = NewPaint(st)
	}
	s.SelectedPaint = NewPaint(s.Selected)
	s.DimPaint = NewPaint(s.Dim)
	return s
}

// StatePaint returns the paint of a display state (the State style's).
func (s Styles) StatePaint(st metrics.State) Paint { return s.paints[styled(st)] }

// State returns the style of a display state.
func (s Styles) State(st metrics.State) lipgloss.Style { return s.states[styled(st)] }

// styled is st when it has a style, else NoData (whose style it takes).
func styled(st metrics.State) metrics.State {
	if st > metrics.Mixed {
		return metrics.NoData
	}
	return st
}

// Glyphs of the timeline strip by state, from no data to forced: the bar
// height grows with the gauge value, so the strip reads without color.
var Glyphs = [...]string{metrics.NoData: "·", metrics.Closed: "▁", metrics.HalfOpen: "▃", metrics.Open: "▆", metrics.Forced: "█"}
