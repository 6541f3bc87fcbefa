package tui

import (
	"slices"
	"time"

	"charm.land/bubbles/v2/textinput"

	"github.com/kosha-platform/koshactl/internal/metrics"
)

// row is one dependency as the table shows it: its merged status and the
// state of each timeline period, computed once per merge so View stays cheap.
type row struct {
	metrics.DependencyStatus
	// periods[i] is the fleet's worst state in the i-th period of the
	// window (NoData when nothing reported).
	periods []metrics.State
}

// periodStates places points on the window's grid by their worst value.
func periodStates(points []metrics.Point, start time.Time, period time.Duration, n int) []metrics.State {
	out := slices.Repeat([]metrics.State{metrics.NoData}, n)
	for _, p := range points {
		i := int(p.Time.Sub(start) / period)
		if i < 0 || i >= n {
			continue
		}
		if b, ok := metrics.GaugeState(p.Max); ok {
			out[i] = metrics.FromBreaker(b)
		}
	}
	return out
}

// tableState is the table sub-view: visible rows (after the filter), the
// cursor and the first row on screen.
type tableState struct {
	visible []int // indexes into Model.rows
	cursor  int   // index into visible
	offset  int   // first visible row on screen
	// selected is the dependency under the cursor; it survives refreshes
	// that reorder or filter rows.
	selected  string
	filter    textinput.Model
	filtering bool
}

// reselect puts the cursor back on the selected dependency after the rows
// changed, or keeps its position when that dependency is gone.
func (t *tableState) reselect(rows []row, height int) {
	for i, idx := range t.visible {
		if rows[idx].Dependency == t.selected {
			t.cursor = i
			break
		}
	}
	t.sync(rows, height)
}

// move moves the cursor by delta rows.
func (t *tableState) move(rows []row, delta, height int) {
	t.cursor += delta
	t.sync(rows, height)
}

// sync clamps the cursor, records the selected dependency and keeps the
// cursor on screen.
func (t *tableState) sync(rows []row, height int) {
	t.cursor = max(min(t.cursor, len(t.visible)-1), 0)
	t.selected = ""
	if len(t.visible) > 0 {
		t.selected = rows[t.visible[t.cursor]].Dependency
	}
	t.clamp(height)
}

// clamp keeps the cursor on screen.
func (t *tableState) clamp(height int) {
	height = max(height, 1)
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+height {
		t.offset = t.cursor - height + 1
	}
	t.offset = max(min(t.offset, len(t.visible)-height), 0)
}
