package circuit

// window is the count-based sliding window of the last n outcomes: a ring
// buffer of failure flags with running counts, so recording an outcome and
// reading the failure count are O(1) and allocation-free. It is not safe for
// concurrent use; the Breaker guards it with its mutex.
type window struct {
	ring     []bool // true = failure
	next     int    // slot the next outcome is written to
	calls    int    // outcomes held, at most len(ring)
	failures int    // failures among them
}

func newWindow(size int) window {
	return window{ring: make([]bool, size)}
}

// record adds one outcome, evicting the oldest once the window is full.
func (w *window) record(failure bool) {
	if w.calls == len(w.ring) {
		if w.ring[w.next] {
			w.failures--
		}
	} else {
		w.calls++
	}
	w.ring[w.next] = failure
	if failure {
		w.failures++
	}
	w.next++
	if w.next == len(w.ring) {
		w.next = 0
	}
}

// reset empties the window, as on entering the closed state.
func (w *window) reset() {
	clear(w.ring)
	w.next, w.calls, w.failures = 0, 0, 0
}

// openThresholds returns t where t[c] is the fewest failures among c calls
// whose failure rate (failures/c) is at least rate, using the same float
// division a reader of the rule would, so "exactly at the threshold" opens
// (3/10 against 0.3 opens, although 0.3*10 > 3 in floating point). Index 0 is
// unused.
func openThresholds(size int, rate float64) []int {
	t := make([]int, size+1)
	for c := 1; c <= size; c++ {
		f := max(0, int(rate*float64(c))-1) // close below the answer
		for float64(f)/float64(c) < rate {
			f++
		}
		t[c] = f
	}
	return t
}
