package human

import (
	"strconv"
	"strings"
)

// Count writes n and noun, plural unless n is one: 1 request, 2 requests,
// 0 items, 3 dependencies. noun is the singular; its plural adds "s", or
// "ies" for a consonant and "y" (dependency).
func Count(n int64, noun string) string {
	return strconv.FormatInt(n, 10) + " " + Plural(n, noun)
}

// Plural is noun as [Count] writes it beside n, without the number.
func Plural(n int64, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	if l := len(noun); l > 1 && noun[l-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[l-2])) {
		return noun[:l-1] + "ies"
	}
	return noun + "s"
}
