package chaos

import "strings"

// ValueFromInput extracts a header value from what an operator pastes or
// pipes into `chaos verify`: a bare value, a header line
// "X-Kosha-Chaos: <value>" (name matched case-insensitively, optional spaces
// after the colon), or the curl argument `chaos sign -o curl` prints
// (-H 'X-Kosha-Chaos: <value>'), with at most one trailing newline ("\n" or
// "\r\n"). Anything else is left in place for [Parse] to reject, so stray
// whitespace inside the value is still reported against its field.
func ValueFromInput(s string) string {
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	if rest, ok := strings.CutPrefix(s, "-H "); ok {
		rest = strings.TrimLeft(rest, " ")
		if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
			s = rest[1 : len(rest)-1]
		}
	}
	if len(s) > len(HeaderName) && strings.EqualFold(s[:len(HeaderName)], HeaderName) && s[len(HeaderName)] == ':' {
		s = strings.TrimLeft(s[len(HeaderName)+1:], " \t")
	}
	return s
}
