package chaos

import "strings"

// ValueFromInput extracts a header value from what an operator pastes or
// pipes into `chaos verify`: a bare value, or a header line
// "X-Kosha-Chaos: <value>" (name matched case-insensitively, optional
// spaces after the colon), with at most one trailing newline ("\n" or
// "\r\n"). Anything else is left in place for [Parse] to reject, so stray
// whitespace inside the value is still reported against its field.
func ValueFromInput(s string) string {
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	if len(s) > len(HeaderName) && strings.EqualFold(s[:len(HeaderName)], HeaderName) && s[len(HeaderName)] == ':' {
		s = strings.TrimLeft(s[len(HeaderName)+1:], " \t")
	}
	return s
}
