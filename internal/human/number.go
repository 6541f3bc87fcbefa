package human

import (
	"math"
	"strconv"
)

// Number writes a count that may be fractional (a bucket's tokens) with at
// most three decimals and no trailing zeros: "19", "0.537", "-2.5"; never
// "-0".
func Number(x float64) string {
	r := math.Round(x*1000) / 1000
	if r == 0 {
		r = 0 // not -0
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
