package store

import (
	"fmt"
	"strconv"

	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Problem says why one stored item does not follow its contract: which
// attribute, and what was found there. Readers that skip or flag such an item
// report it with a Problem, so every list shows the same three facts
// (docs/contracts/cli-output.md, "Unreadable and malformed items").
type Problem struct {
	// PK is the item's partition key.
	PK string `json:"pk"`
	// Attribute names the offending attribute ("pk" when the key itself is wrong).
	Attribute string `json:"attribute"`
	// Problem says what was found and what the contract wants, e.g.
	// `found S "tomorrow", want a number (epoch milliseconds)`.
	Problem string `json:"problem"`
}

func (p Problem) Error() string {
	return fmt.Sprintf("%s: %s: %s", p.PK, p.Attribute, p.Problem)
}

// Found describes attribute name of it as stored, for a [Problem]: `absent`,
// `S "tomorrow"` (quoted by [textsafe.Quote], so a 399 KB string costs one
// line), `N 1e+20` (numbers in Go's shortest form), or, for DynamoDB's other
// types, the type and its size (`BOOL true`, `NULL`, `M (2 attributes)`).
func Found(it Item, name string) string {
	v, ok := it[name]
	if !ok {
		return "absent"
	}
	switch x := v.(type) {
	case string:
		return "S " + textsafe.Quote(x)
	case int64:
		return "N " + strconv.FormatInt(x, 10)
	case int:
		return "N " + strconv.Itoa(x)
	case float64:
		return "N " + strconv.FormatFloat(x, 'g', -1, 64)
	case Number:
		return "N " + string(x)
	}
	return describeOther(v)
}
