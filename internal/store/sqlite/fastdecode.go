package sqlite

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/store"
)

// decodeFast reads the attrs text of a row whose attributes are all
// strings and numbers, the form [encode] writes for every koshactl item:
// {"name":{"S":"text"},"n":{"N":"12"}} (no spaces). It reads it without
// reflection, which is most of what listing a large table costs (a row is
// decoded for each item read). ok is false for anything else (another
// type, spaces, an escape it does not read, a string that is not valid
// UTF-8), and the caller decodes the row the general way, so both ways
// read every text alike.
func decodeFast(pk, attrs string) (it store.Item, ok bool) {
	s := attrs
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	it = make(store.Item, strings.Count(s, `":{"`)+1)
	s = s[1:]
	for first := true; ; first = false {
		if s == "}" {
			break
		}
		if s == "" {
			return nil, false
		}
		if !first {
			if s[0] != ',' {
				return nil, false
			}
			s = s[1:]
		}
		name, rest, ok := jsonString(s)
		if !ok || !strings.HasPrefix(rest, `:{"`) || len(rest) < 7 {
			return nil, false
		}
		kind, rest := rest[3], rest[4:]
		if (kind != 'S' && kind != 'N') || !strings.HasPrefix(rest, `":`) {
			return nil, false
		}
		text, rest, ok := jsonString(rest[2:])
		if !ok || !strings.HasPrefix(rest, "}") {
			return nil, false
		}
		s = rest[1:]
		if kind == 'S' {
			it[name] = text
			continue
		}
		n, err := store.DecodeNumber(text)
		if err != nil {
			return nil, false
		}
		it[name] = n
	}
	it[store.PK] = pk
	return it, true
}

// jsonString reads the JSON string s starts with and returns its value and
// the text after it. It reads the escapes encoding/json writes but for
// surrogates (\ud800 and the like), and refuses a string that is not valid
// UTF-8, or holds a raw control character.
func jsonString(s string) (value, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	i := 1
	for i < len(s) && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20 {
		i++
	}
	if i < len(s) && s[i] == '"' {
		v := s[1:i]
		if !utf8.ValidString(v) {
			return "", "", false
		}
		return v, s[i+1:], true
	}
	var b strings.Builder
	b.WriteString(s[1:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			v := b.String()
			if !utf8.ValidString(v) {
				return "", "", false
			}
			return v, s[i+1:], true
		case c < 0x20:
			return "", "", false
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", "", false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if i+6 > len(s) {
				return "", "", false
			}
			u, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
			if err != nil {
				return "", "", false
			}
			r := rune(u)
			if utf8.RuneLen(r) < 0 || (r >= 0xd800 && r <= 0xdfff) {
				return "", "", false
			}
			b.WriteRune(r)
			i += 6
			continue
		default:
			return "", "", false
		}
		i += 2
	}
	return "", "", false
}
