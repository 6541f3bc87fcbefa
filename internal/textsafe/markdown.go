package textsafe

import "strings"

// Markdown escapes one untrusted value for Markdown (GitHub's flavor
// included) as little as keeps it text, so a summary still reads well in a
// terminal or a chat message: one safe line ([OneLine]); &, < and > as HTML
// entities, so no value is a tag or an entity; a backslash before what
// opens inline syntax (\ ` * _ [ ] | ~ $: code, emphasis, links and
// images, table cells, strikethrough, math) and before @ (a mention, an
// e-mail autolink); the : of :// and the . of www. (no extended autolink);
// and a first character that would start a block (a heading, quote, list or
// rule) where a value begins a line. Apostrophes, parentheses, colons and
// dots stay as they are.
func Markdown(s string) string {
	s = OneLine(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	if n := blockMarker(s); n > 0 {
		b.WriteString(s[:n-1])
		b.WriteByte('\\')
		b.WriteByte(s[n-1])
		s = s[n:]
	}
	for i, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case strings.ContainsRune("\\`*_[]|~$@", r),
			r == ':' && strings.HasPrefix(s[i:], "://"),
			r == '.' && i >= 3 && strings.EqualFold(s[i-3:i], "www"):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// blockMarker is the length of s's prefix ending in a character that
// would start a block at the beginning of a line (# > - + = or the . or )
// after a number), 0 when there is none.
func blockMarker(s string) int {
	if s == "" {
		return 0
	}
	if strings.IndexByte("#>-+=", s[0]) >= 0 {
		return 1
	}
	n := 0
	for n < len(s) && n < 10 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n < len(s) && (s[n] == '.' || s[n] == ')') {
		return n + 1
	}
	return 0
}
