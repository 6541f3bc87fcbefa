package breaker

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// The written-out dependency rule accepts exactly what the expression it
// replaced accepts: every edge case, and 50,000 random strings over the
// allowed bytes and a few others (a non-ASCII letter among them).
func TestDependencyRuleIsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	cases := []string{"", "a", "-", "a-", "-a", "a-b", "A", "openai", "core-api", "a--b", "é", "a\n", "a b",
		"a234567890123456789012345678901234567890123456789012345678901bc"[:63],
		"a2345678901234567890123456789012345678901234567890123456789012bc"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50000 {
		alphabet := []rune("az09-A._ é\n")
		if i%2 == 0 {
			alphabet = []rune("az09-") // only allowed bytes: the length and hyphen rules decide
		}
		n := r.IntN(70)
		b := make([]rune, 0, n)
		for range n {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := validDependency(s), re.MatchString(s); got != want {
			t.Errorf("validDependency(%q) = %v, the expression says %v", s, got, want)
		}
	}
}
