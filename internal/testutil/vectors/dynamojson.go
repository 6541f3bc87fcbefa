package vectors

import (
	"fmt"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Value is one attribute value in DynamoDB JSON, as `aws dynamodb get-item`
// prints it and boto3's client returns it: {"S": "x"}, {"N": "1"},
// {"BOOL": true}, {"NULL": true}, {"B": "<base64>"}, {"SS": [...]}, ...
type Value map[string]any

// Item is an item in DynamoDB JSON.
type Item map[string]Value

// S is a string attribute value.
func S(s string) Value { return Value{"S": s} }

// N is a number attribute value, its text as stored.
func N(text string) Value { return Value{"N": text} }

// Of is an attribute value of any other DynamoDB type (BOOL, NULL, B, L, M,
// SS, NS, BS), given as DynamoDB JSON holds it.
func Of(typ string, v any) Value { return Value{typ: v} }

// Other stands for an attribute of a type koshactl's item model does not
// hold (anything but S and N). A contract rule that meets one where it wants
// a string or a number treats it as wrong-typed; attributes the contract
// does not name are ignored whatever their type. (The vectors state that
// rule through the Go rule functions; both of koshactl's backends read such
// an attribute into the item model's own types, store.Bool, store.Map, …,
// which the rules treat the same way.)
type Other struct {
	// Type is the DynamoDB type: BOOL, NULL, B, L, M, SS, NS or BS.
	Type string
}

// StoreItem converts a DynamoDB JSON item to the item model the Go rules
// read: S to string, N through [store.ParseNumber] (as both backends read
// numbers), any other type to [Other].
func StoreItem(it Item) (store.Item, error) {
	out := make(store.Item, len(it))
	for name, v := range it {
		if len(v) != 1 {
			return nil, fmt.Errorf("attribute %s: want one type key, got %v", name, v)
		}
		for typ, x := range v {
			switch typ {
			case "S":
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("attribute %s: S of %T", name, x)
				}
				out[name] = s
			case "N":
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("attribute %s: N of %T", name, x)
				}
				n, err := store.ParseNumber(s)
				if err != nil {
					return nil, fmt.Errorf("attribute %s: %w", name, err)
				}
				out[name] = n
			default:
				out[name] = Other{Type: typ}
			}
		}
	}
	return out, nil
}

// FromStore converts an item of the Go model (strings and numbers) to
// DynamoDB JSON, numbers written as the backends write them
// ([store.FormatNumber]).
func FromStore(it store.Item) (Item, error) {
	out := make(Item, len(it))
	for name, v := range it {
		if s, ok := v.(string); ok {
			out[name] = S(s)
			continue
		}
		n, ok := store.FormatNumber(v)
		if !ok {
			return nil, fmt.Errorf("attribute %s: unsupported %T", name, v)
		}
		out[name] = N(n)
	}
	return out, nil
}
