package metrics

import (
	"strings"
	"testing"
)

// A body of exactly the cap is read whole; one byte more is over it.
func TestReadCappedAtTheBoundary(t *testing.T) {
	for n, wantOver := range map[int]bool{0: false, 9: false, 10: false, 11: true, 1000: true} {
		b, over, err := readCapped(strings.NewReader(strings.Repeat("x", n)), 10)
		if err != nil || over != wantOver || (!over && len(b) != n) || (over && b != nil) {
			t.Errorf("%d bytes: %d read, over %v, %v; want over %v", n, len(b), over, err, wantOver)
		}
	}
}
