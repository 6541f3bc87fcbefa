package config

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/rulecheck"
)

// The written-out context-name rule accepts exactly what the expression it
// replaced accepts: every edge case, and 50,000 random strings over the
// allowed bytes and a few others (a non-ASCII letter among them).
func TestNameRuleIsTheExpression(t *testing.T) {
	rulecheck.MatchesExpression(t, "validName", validName, `^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`,
		[]string{"", "a", "-", ".", "_", "a-", "a.", "a_", "-a", ".a", "Dev", "prod-eu.1", "é", "a\n", "a b",
			strings.Repeat("a", 63), strings.Repeat("a", 64)},
		"azAZ09-._", " é\n/")
}
