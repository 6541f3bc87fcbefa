package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Bounds of a string in a result, in characters of its rendered form, the
// marker excluded.
const (
	// MaxString bounds every string (and object key) of a result: 1 KiB
	// holds any reason, name or alarm text a person reads, and a hostile
	// 400 KB reason costs a result 1 KiB.
	MaxString = 1024
	// MaxLong bounds a field koshactl rendered itself and named in
	// [Output].Long (the game-day Markdown summary).
	MaxLong = 64 * 1024
)

// TruncatedMarker ends a string cut to its bound, followed by the
// original's length in characters and "]".
const TruncatedMarker = "…[truncated, "

// Sanitize is doc as a result carries it: its JSON form (the CLI's -o json)
// with every string and object key rendered by [textsafe.Line] (controls,
// newlines and bidi marks as visible escapes) and cut to [MaxString]
// characters with [TruncatedMarker]; top-level fields named in long are
// rendered by [textsafe.Text] (newlines kept) and cut to [MaxLong].
// Numbers keep their exact form.
func Sanitize(doc any, long ...string) (any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	if m, ok := v.(map[string]any); ok && len(long) > 0 {
		out := make(map[string]any, len(m))
		for k, e := range m {
			if s, isStr := e.(string); isStr && slices.Contains(long, k) {
				out[bound(k, MaxString, false)] = bound(s, MaxLong, true)
				continue
			}
			out[bound(k, MaxString, false)] = walk(e)
		}
		return out, nil
	}
	return walk(v), nil
}

func walk(v any) any {
	switch x := v.(type) {
	case string:
		return bound(x, MaxString, false)
	case []any:
		for i, e := range x {
			x[i] = walk(e)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[bound(k, MaxString, false)] = walk(e)
		}
		return out
	}
	return v
}

// bound renders s (by textsafe's Text rule when keepLines, else Line) and
// cuts the rendering to max characters, never inside one character's
// escape, marking a cut with the original's length.
func bound(s string, limit int, keepLines bool) string {
	render := textsafe.Line
	if keepLines {
		render = textsafe.Text
	}
	if r := render(s); textsafe.Len(r) <= limit {
		return r
	}
	var b strings.Builder
	n := 0
	for i, w := 0, 0; i < len(s); i += w {
		_, w = utf8.DecodeRuneInString(s[i:])
		piece := render(s[i : i+w])
		pn := textsafe.Len(piece)
		if n+pn > limit {
			break
		}
		b.WriteString(piece)
		n += pn
	}
	b.WriteString(TruncatedMarker + strconv.Itoa(textsafe.Len(s)) + " characters]")
	return b.String()
}
