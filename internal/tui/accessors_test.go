package tui

import "github.com/kosha-platform/koshactl/internal/metrics"

// The model's state as the tests read it.

// Rows returns the merged statuses, in table order (tests assert on it).
func (m Model) Rows() []metrics.DependencyStatus {
	out := make([]metrics.DependencyStatus, len(m.rows))
	for i, r := range m.rows {
		out[i] = r.DependencyStatus
	}
	return out
}

// Status returns the status line's text and whether it reports an error.
func (m Model) Status() (string, bool) { return m.status, m.statusIsErr }

// Selected returns the dependency under the cursor ("" when none).
func (m Model) Selected() string { return m.table.selected }

// Quitting reports whether the model asked the program to quit.
func (m Model) Quitting() bool { return m.quitting }
