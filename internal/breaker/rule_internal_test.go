package breaker

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/rulecheck"
)

// The written-out dependency rule accepts exactly what the expression it
// replaced accepts: every edge case, and 50,000 random strings over the
// allowed bytes and a few others (a non-ASCII letter among them).
func TestDependencyRuleIsTheExpression(t *testing.T) {
	rulecheck.MatchesExpression(t, "validDependency", validDependency, `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`,
		[]string{"", "a", "-", "a-", "-a", "a-b", "A", "openai", "core-api", "a--b", "é", "a\n", "a b",
			"a234567890123456789012345678901234567890123456789012345678901bc"[:63],
			"a2345678901234567890123456789012345678901234567890123456789012bc"},
		"az09-", "A._ é\n")
}
