package circuit

import (
	"slices"
	"testing"
)

func TestWindowSlidesOverLastN(t *testing.T) {
	w := newWindow(4)
	steps := []struct {
		failure        bool
		calls, failing int
	}{
		{true, 1, 1},
		{true, 2, 2},
		{false, 3, 2},
		{false, 4, 2},
		{false, 4, 1}, // evicts the first failure
		{false, 4, 0}, // evicts the second
		{true, 4, 1},
		{true, 4, 2},
		{true, 4, 3},
		{true, 4, 4},
		{false, 4, 3},
	}
	for i, s := range steps {
		w.record(s.failure)
		if w.calls != s.calls || w.failures != s.failing {
			t.Fatalf("after step %d: calls=%d failures=%d, want %d/%d", i, w.calls, w.failures, s.calls, s.failing)
		}
	}
	w.reset()
	if w.calls != 0 || w.failures != 0 || slices.Contains(w.ring, true) {
		t.Fatalf("reset left calls=%d failures=%d ring=%v", w.calls, w.failures, w.ring)
	}
	w.record(false)
	if w.calls != 1 || w.failures != 0 {
		t.Fatalf("after reset and one success: %d/%d", w.calls, w.failures)
	}
}

func TestWindowOfOne(t *testing.T) {
	w := newWindow(1)
	for i, f := range []bool{true, false, true, true, false} {
		w.record(f)
		want := 0
		if f {
			want = 1
		}
		if w.calls != 1 || w.failures != want {
			t.Fatalf("step %d: %d/%d", i, w.calls, w.failures)
		}
	}
}

func TestOpenThresholdsAreExactAtTheRate(t *testing.T) {
	tests := []struct {
		size int
		rate float64
		want []int
	}{
		{10, 0.5, []int{0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}},
		// 0.3*10 is 3.0000000000000004 in floating point; 3 of 10 must still
		// count as "at the threshold".
		{10, 0.3, []int{0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3}},
		{5, 1, []int{0, 1, 2, 3, 4, 5}},
		{4, 0.01, []int{0, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		if got := openThresholds(tt.size, tt.rate); !slices.Equal(got, tt.want) {
			t.Errorf("openThresholds(%d, %v) = %v, want %v", tt.size, tt.rate, got, tt.want)
		}
	}
}
