// Package suggest finds the likely intended word for a typo, for "did you
// mean" hints in errors (an unknown dependency, drill key or step kind).
package suggest

// Closest returns the candidate nearest to s by edit distance when that
// distance is below limit, else "". norm, when non-nil, is applied to both
// sides before comparing (e.g. lowercasing, dropping hyphens).
func Closest(s string, candidates []string, limit int, norm func(string) string) string {
	if norm == nil {
		norm = func(v string) string { return v }
	}
	best, bestD := "", limit
	ns := norm(s)
	for _, c := range candidates {
		if d := Distance(ns, norm(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
