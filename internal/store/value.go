package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// DynamoDB has ten attribute types. Strings (S) are Go strings and numbers
// (N) int64, float64 or [Number]; the other eight have a type each, so an
// item written by another tool (a note of type BOOL, a tag set of type SS)
// is read, kept and written back whole, never refused and never dropped.
// Values are immutable once stored in an [Item]: never modify a [Binary],
// [List], [Map] or set in place.
type (
	// Bool is a BOOL attribute.
	Bool bool
	// Null is a NULL attribute (DynamoDB's only NULL value is true).
	Null struct{}
	// Binary is a B attribute: its bytes.
	Binary []byte
	// List is an L attribute: values of any of the ten types.
	List []any
	// Map is an M attribute: named values of any of the ten types.
	Map map[string]any
	// StringSet is an SS attribute: distinct strings, at least one.
	StringSet []string
	// NumberSet is an NS attribute: distinct numbers, at least one, each kept
	// as its decimal text.
	NumberSet []Number
	// BinarySet is a BS attribute: distinct byte strings, at least one.
	BinarySet [][]byte
)

// maxDepth is how deeply DynamoDB lets lists and maps nest.
const maxDepth = 32

// MarshalJSON writes the value in DynamoDB's JSON notation, {"BOOL":true}.
func (b Bool) MarshalJSON() ([]byte, error) { return MarshalTyped(b) }

// MarshalJSON writes {"NULL":true}.
func (n Null) MarshalJSON() ([]byte, error) { return MarshalTyped(n) }

// MarshalJSON writes {"B":"<base64>"}.
func (b Binary) MarshalJSON() ([]byte, error) { return MarshalTyped(b) }

// MarshalJSON writes {"L":[…]}, each element in DynamoDB's JSON notation.
func (l List) MarshalJSON() ([]byte, error) { return MarshalTyped(l) }

// MarshalJSON writes {"M":{…}}, each value in DynamoDB's JSON notation.
func (m Map) MarshalJSON() ([]byte, error) { return MarshalTyped(m) }

// MarshalJSON writes {"SS":[…]}.
func (s StringSet) MarshalJSON() ([]byte, error) { return MarshalTyped(s) }

// MarshalJSON writes {"NS":["1","2.5"]}.
func (s NumberSet) MarshalJSON() ([]byte, error) { return MarshalTyped(s) }

// MarshalJSON writes {"BS":["<base64>",…]}.
func (s BinarySet) MarshalJSON() ([]byte, error) { return MarshalTyped(s) }

// typed is v in DynamoDB's JSON notation, as a value encoding/json writes.
func typed(v any) (map[string]any, error) {
	switch x := v.(type) {
	case string:
		return map[string]any{"S": x}, nil
	case Bool:
		return map[string]any{"BOOL": bool(x)}, nil
	case Null:
		return map[string]any{"NULL": true}, nil
	case Binary:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(x)}, nil
	case List:
		out := make([]any, len(x))
		for i, e := range x {
			t, err := typed(e)
			if err != nil {
				return nil, err
			}
			out[i] = t
		}
		return map[string]any{"L": out}, nil
	case Map:
		out := make(map[string]any, len(x))
		for k, e := range x {
			t, err := typed(e)
			if err != nil {
				return nil, err
			}
			out[k] = t
		}
		return map[string]any{"M": out}, nil
	case StringSet:
		return map[string]any{"SS": []string(x)}, nil
	case NumberSet:
		out := make([]string, len(x))
		for i, n := range x {
			out[i] = string(n)
		}
		return map[string]any{"NS": out}, nil
	case BinarySet:
		out := make([]string, len(x))
		for i, b := range x {
			out[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": out}, nil
	}
	if n, ok := FormatNumber(v); ok {
		return map[string]any{"N": n}, nil
	}
	return nil, fmt.Errorf("%w: unsupported type %T", ErrInvalidItem, v)
}

// MarshalTyped writes v in DynamoDB's JSON notation, the form the AWS CLI
// reads and writes: {"S":"x"}, {"N":"1"}, {"BOOL":true}, {"L":[{"S":"x"}]}.
func MarshalTyped(v any) ([]byte, error) {
	t, err := typed(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

// DecodeNumber reads the text of a stored number (DynamoDB's N: decimal,
// never NaN, Inf or hex) as [ParseNumber] does.
func DecodeNumber(s string) (any, error) {
	if _, ok := parseDecimal(s); !ok {
		return nil, fmt.Errorf("number %q is not decimal", s)
	}
	return ParseNumber(s)
}

// UnmarshalTyped reads one value in DynamoDB's JSON notation (see
// [MarshalTyped]): an object with exactly one of the ten type names.
func UnmarshalTyped(data []byte) (any, error) { return unmarshalTyped(data, 0) }

var errTyped = errors.New("want one of S, N, B, BOOL, NULL, L, M, SS, NS, BS")

func unmarshalTyped(data []byte, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels", maxDepth)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a typed value: %w", errTyped)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("%d type names: %w", len(m), errTyped)
	}
	for kind, raw := range m {
		return decodeTyped(kind, raw, depth)
	}
	panic("unreachable")
}

func decodeTyped(kind string, raw json.RawMessage, depth int) (any, error) {
	var err error
	switch kind {
	case "S":
		var s string
		if err = strict(raw, &s); err == nil {
			return s, nil
		}
	case "N":
		var s string
		if err = strict(raw, &s); err == nil {
			return DecodeNumber(s)
		}
	case "BOOL":
		var b bool
		if err = strict(raw, &b); err == nil {
			return Bool(b), nil
		}
	case "NULL":
		var b bool
		if err = strict(raw, &b); err == nil {
			if !b {
				return nil, errors.New("a NULL that is not true")
			}
			return Null{}, nil
		}
	case "B":
		var b []byte
		if err = strict(raw, &b); err == nil {
			return Binary(b), nil
		}
	case "L":
		var elems []json.RawMessage
		if err = strict(raw, &elems); err == nil {
			out := make(List, len(elems))
			for i, e := range elems {
				if out[i], err = unmarshalTyped(e, depth+1); err != nil {
					return nil, fmt.Errorf("element %d: %w", i, err)
				}
			}
			return out, nil
		}
	case "M":
		var elems map[string]json.RawMessage
		if err = strict(raw, &elems); err == nil {
			out := make(Map, len(elems))
			for k, e := range elems {
				if out[k], err = unmarshalTyped(e, depth+1); err != nil {
					return nil, fmt.Errorf("map key %q: %w", k, err)
				}
			}
			return out, nil
		}
	case "SS":
		var s []string
		if err = strict(raw, &s); err == nil {
			return StringSet(s), nil
		}
	case "NS":
		var s []string
		if err = strict(raw, &s); err == nil {
			out := make(NumberSet, len(s))
			for i, n := range s {
				if _, ok := parseDecimal(n); !ok {
					return nil, fmt.Errorf("NS element %q is not a decimal number", n)
				}
				out[i] = Number(n)
			}
			return out, nil
		}
	case "BS":
		var s [][]byte
		if err = strict(raw, &s); err == nil {
			return BinarySet(s), nil
		}
	default:
		return nil, fmt.Errorf("type name %q: %w", kind, errTyped)
	}
	return nil, fmt.Errorf("%s: %w", kind, err)
}

// strict decodes raw into v, refusing JSON null (which encoding/json would
// read as a zero value).
func strict(raw json.RawMessage, v any) error {
	if string(bytes.TrimSpace(raw)) == "null" {
		return errors.New("found null")
	}
	return json.Unmarshal(raw, v)
}

// validateValue checks one value as DynamoDB would store it and returns its
// size in DynamoDB's accounting.
func validateValue(v any, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("nested more than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return 0, errors.New("not valid UTF-8")
		}
		return len(x), nil
	case int64, int:
		return numberBytes, nil
	case Number:
		return numberBytes, x.validate()
	case float64:
		if err := validateFloat(x); err != nil {
			return 0, err
		}
		return numberBytes, nil
	case Bool, Null:
		return 1, nil
	case Binary:
		return len(x), nil
	case List:
		size := 3
		for i, e := range x {
			n, err := validateValue(e, depth+1)
			if err != nil {
				return 0, fmt.Errorf("element %d: %w", i, err)
			}
			size += 1 + n
		}
		return size, nil
	case Map:
		size := 3
		for k, e := range x {
			if !utf8.ValidString(k) {
				return 0, fmt.Errorf("map key %q is not valid UTF-8", k)
			}
			n, err := validateValue(e, depth+1)
			if err != nil {
				return 0, fmt.Errorf("map key %q: %w", k, err)
			}
			size += 1 + len(k) + n
		}
		return size, nil
	case StringSet:
		size := 0
		for _, s := range x {
			if !utf8.ValidString(s) {
				return 0, errors.New("a string of the set is not valid UTF-8")
			}
			size += len(s)
		}
		return size, setOK(len(x), func(i, j int) bool { return x[i] == x[j] })
	case NumberSet:
		for _, n := range x {
			if err := n.validate(); err != nil {
				return 0, err
			}
		}
		return numberBytes * len(x), setOK(len(x), func(i, j int) bool { return numEqual(string(x[i]), string(x[j])) })
	case BinarySet:
		size := 0
		for _, b := range x {
			size += len(b)
		}
		return size, setOK(len(x), func(i, j int) bool { return bytes.Equal(x[i], x[j]) })
	}
	return 0, fmt.Errorf("unsupported type %T", v)
}

// setOK checks a set of n elements: not empty, no element twice (DynamoDB
// refuses both).
func setOK(n int, same func(i, j int) bool) error {
	if n == 0 {
		return errors.New("an empty set (DynamoDB stores none)")
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if same(i, j) {
				return errors.New("a set holding one element twice")
			}
		}
	}
	return nil
}

// equalOther compares two values of which at least one is of a type beyond
// S and N: lists element by element, maps by name, sets as sets.
func equalOther(a, b any) bool {
	switch x := a.(type) {
	case Bool:
		y, ok := b.(Bool)
		return ok && x == y
	case Null:
		_, ok := b.(Null)
		return ok
	case Binary:
		y, ok := b.(Binary)
		return ok && bytes.Equal(x, y)
	case List:
		y, ok := b.(List)
		return ok && slices.EqualFunc(x, y, Equal)
	case Map:
		y, ok := b.(Map)
		return ok && maps.EqualFunc(x, y, Equal)
	case StringSet:
		y, ok := b.(StringSet)
		return ok && sameSet(x, y, func(p, q string) bool { return p == q })
	case NumberSet:
		y, ok := b.(NumberSet)
		return ok && sameSet(x, y, func(p, q Number) bool { return numEqual(string(p), string(q)) })
	case BinarySet:
		y, ok := b.(BinarySet)
		return ok && sameSet(x, y, bytes.Equal)
	}
	return false
}

// sameSet reports whether a and b hold the same elements, in any order.
func sameSet[T any](a, b []T, eq func(T, T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y T) bool { return eq(x, y) }) {
			return false
		}
	}
	return true
}

// isOther reports whether v is of a type beyond S and N.
func isOther(v any) bool {
	switch v.(type) {
	case Bool, Null, Binary, List, Map, StringSet, NumberSet, BinarySet:
		return true
	}
	return false
}

// describeOther is [Found]'s text for a value beyond S and N: its type and
// its size, never its content (which may be large).
func describeOther(v any) string {
	count := func(n int, what string) string {
		if n == 1 {
			return " (1 " + what + ")"
		}
		return " (" + strconv.Itoa(n) + " " + what + "s)"
	}
	switch x := v.(type) {
	case Bool:
		return "BOOL " + strconv.FormatBool(bool(x))
	case Null:
		return "NULL"
	case Binary:
		return "B" + count(len(x), "byte")
	case List:
		return "L" + count(len(x), "element")
	case Map:
		return "M" + count(len(x), "attribute")
	case StringSet:
		return "SS" + count(len(x), "string")
	case NumberSet:
		return "NS" + count(len(x), "number")
	case BinarySet:
		return "BS" + count(len(x), "binary value")
	}
	return fmt.Sprintf("%T", v)
}
