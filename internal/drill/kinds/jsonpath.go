package kinds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// JSONPath is a path into a JSON document, as http expectations and
// ${steps.ID.json.PATH} write it:
//
//	result.degraded            object keys, separated by dots
//	result.items[0].id         [N] indexes an array (from 0; -1 is the last)
//	headers["x.y"]             ["key"] for keys with dots or brackets
//	result.content[0].text|json.status
//	                           |json parses a string holding JSON and goes on
//
// A leading "$." is allowed and ignored.
type JSONPath struct {
	raw  string
	segs []pathSeg
}

type segKind uint8

const (
	segKey segKind = iota
	segIndex
	segJSON
)

type pathSeg struct {
	kind  segKind
	key   string
	index int
}

// String returns the path as written.
func (p JSONPath) String() string { return p.raw }

// ParseJSONPath parses a path.
func ParseJSONPath(s string) (JSONPath, error) {
	p := JSONPath{raw: s}
	rest := strings.TrimPrefix(strings.TrimPrefix(s, "$"), ".")
	if rest == "" {
		return p, fmt.Errorf("empty JSON path")
	}
	expectKey := true
	for len(rest) > 0 {
		switch {
		case strings.HasPrefix(rest, "|json"):
			p.segs = append(p.segs, pathSeg{kind: segJSON})
			rest = rest[len("|json"):]
			expectKey = false
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return p, fmt.Errorf("unclosed [ in JSON path %q", s)
			}
			inner := rest[1:end]
			if len(inner) >= 2 && (inner[0] == '"' || inner[0] == '\'') && inner[len(inner)-1] == inner[0] {
				p.segs = append(p.segs, pathSeg{kind: segKey, key: inner[1 : len(inner)-1]})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil {
					return p, fmt.Errorf("[%s] in JSON path %q is neither an array index nor a quoted key", inner, s)
				}
				p.segs = append(p.segs, pathSeg{kind: segIndex, index: n})
			}
			rest = rest[end+1:]
			expectKey = false
		case rest[0] == '.':
			if expectKey {
				return p, fmt.Errorf("empty key in JSON path %q", s)
			}
			rest = rest[1:]
			expectKey = true
			if rest == "" {
				return p, fmt.Errorf("JSON path %q ends with a dot", s)
			}
		default:
			if !expectKey {
				return p, fmt.Errorf("JSON path %q: expected . or [ before %q", s, rest)
			}
			end := strings.IndexAny(rest, ".[|")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return p, fmt.Errorf("empty key in JSON path %q", s)
			}
			p.segs = append(p.segs, pathSeg{kind: segKey, key: rest[:end]})
			rest = rest[end:]
			expectKey = false
		}
	}
	if expectKey {
		return p, fmt.Errorf("JSON path %q ends with a dot", s)
	}
	return p, nil
}

// Eval returns the value at the path in doc (as decoded by decodeJSON),
// and whether it exists.
func (p JSONPath) Eval(doc any) (any, bool, error) {
	cur := doc
	for _, s := range p.segs {
		switch s.kind {
		case segKey:
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, false, nil
			}
			if cur, ok = obj[s.key]; !ok {
				return nil, false, nil
			}
		case segIndex:
			arr, ok := cur.([]any)
			if !ok {
				return nil, false, nil
			}
			i := s.index
			if i < 0 {
				i += len(arr)
			}
			if i < 0 || i >= len(arr) {
				return nil, false, nil
			}
			cur = arr[i]
		case segJSON:
			str, ok := cur.(string)
			if !ok {
				return nil, false, fmt.Errorf("%s: |json applies to a string, found %s", p.raw, jsonType(cur))
			}
			v, err := decodeJSON([]byte(str))
			if err != nil {
				return nil, false, fmt.Errorf("%s: the string is not JSON: %w", p.raw, err)
			}
			cur = v
		}
	}
	return cur, true, nil
}

// decodeJSON decodes a document keeping numbers exact (json.Number).
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// jsonText renders a JSON value compactly for messages and outputs:
// strings bare, everything else as JSON.
func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	case json.Number:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
