package rulecheck

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// MatchesExpression checks that rule (called name in failures) accepts
// exactly what expr accepts: every edge case, and 50,000 strings of up to 69
// runes, drawn from the same seed on every run, half of them only of the
// allowed runes (the length and position rules decide) and half of allowed
// and others (a non-ASCII letter among them, say).
func MatchesExpression(t testing.TB, name string, rule func(string) bool, expr string, edges []string, allowed, others string) {
	t.Helper()
	re := regexp.MustCompile(expr)
	cases := append([]string(nil), edges...)
	r := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // G404: a seeded stream, so every run tries the same strings; nothing here is secret
	for i := range 50000 {
		alphabet := []rune(allowed + others)
		if i%2 == 0 {
			alphabet = []rune(allowed)
		}
		n := r.IntN(70)
		b := make([]rune, 0, n)
		for range n {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := rule(s), re.MatchString(s); got != want {
			t.Errorf("%s(%q) = %v, the expression says %v", name, s, got, want)
		}
	}
}
