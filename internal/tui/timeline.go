package tui

import (
	"strings"

	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

// strip renders period states in at most width cells, newest on the right.
// When the window has more periods than cells, each cell shows the worst
// state of the periods it covers. The result is padded on the left to width.
func strip(periods []metrics.State, width int, st styles.Styles) string {
	n := len(periods)
	if width <= 0 || n == 0 {
		return strings.Repeat(" ", max(width, 0))
	}
	per := (n + width - 1) / width // periods per cell
	cells := (n + per - 1) / per
	var b strings.Builder
	b.Grow(width * 4)
	b.WriteString(strings.Repeat(" ", width-cells))
	run, runState := 0, metrics.State(255)
	flush := func() {
		if run == 0 {
			return
		}
		b.WriteString(st.StatePaint(runState).Apply(strings.Repeat(styles.Glyphs[runState], run)))
	}
	for c := 0; c < cells; c++ {
		hi := n - (cells-1-c)*per
		lo := max(hi-per, 0)
		worst := metrics.NoData
		for _, s := range periods[lo:hi] {
			worst = worse(worst, s)
		}
		if worst != runState {
			flush()
			run, runState = 0, worst
		}
		run++
	}
	flush()
	return b.String()
}

// worse returns the more severe of two period states: any gauge state is
// worse than no data, and the gauge's numbers (0 closed .. 3 forced) rank
// the rest.
func worse(a, b metrics.State) metrics.State {
	switch {
	case a == metrics.NoData:
		return b
	case b == metrics.NoData:
		return a
	}
	return max(a, b)
}
