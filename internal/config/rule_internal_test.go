package config

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The written-out context-name rule accepts exactly what the expression it
// replaced accepts: every edge case, and 50,000 random strings over the
// allowed bytes and a few others (a non-ASCII letter among them).
func TestNameRuleIsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	cases := []string{"", "a", "-", ".", "_", "a-", "a.", "a_", "-a", ".a", "Dev", "prod-eu.1", "é", "a\n", "a b",
		strings.Repeat("a", 63), strings.Repeat("a", 64)}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50000 {
		alphabet := []rune("azAZ09-._ é\n/")
		if i%2 == 0 {
			alphabet = []rune("azAZ09-._") // only allowed bytes: the length and first-byte rules decide
		}
		n := r.IntN(70)
		b := make([]rune, 0, n)
		for range n {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := validName(s), re.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, the expression says %v", s, got, want)
		}
	}
}
