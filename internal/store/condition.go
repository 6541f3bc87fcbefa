package store

import "fmt"

type condKind uint8

const (
	condAlways condKind = iota
	condAbsent
	condPresent
	condEquals
	condPresentWithout
)

// Condition guards a write. Build one with [Always], [IfAbsent], [IfPresent],
// [IfEquals] or [IfPresentWithout]; the zero value is [Always].
type Condition struct {
	kind  condKind
	attr  string
	value any
}

// Always writes whatever the item's current state. Control-plane mutations
// should not use it; it exists for tests and garbage collection.
func Always() Condition { return Condition{} }

// IfAbsent holds when no item exists under the pk.
func IfAbsent() Condition { return Condition{kind: condAbsent} }

// IfPresent holds when an item exists under the pk.
func IfPresent() Condition { return Condition{kind: condPresent} }

// IfEquals holds when the item exists and its attribute attr equals v.
func IfEquals(attr string, v any) Condition { return Condition{kind: condEquals, attr: attr, value: v} }

// IfPresentWithout holds when the item exists and has no attribute attr. It
// is how a write is made conditional on an attribute that was absent when the
// item was read ("attribute_exists(pk) AND attribute_not_exists(attr)").
func IfPresentWithout(attr string) Condition { return Condition{kind: condPresentWithout, attr: attr} }

// IsAlways reports whether the condition is [Always] (no check at all).
func (c Condition) IsAlways() bool { return c.kind == condAlways }

// Validate checks that the condition can be evaluated: IfEquals needs an
// attribute name and a string, int, int64 or finite float64 value;
// IfPresentWithout needs an attribute name. Backends call it
// before writing; a bad condition fails with ErrInvalidItem.
func (c Condition) Validate() error {
	if c.kind == condPresentWithout {
		if c.attr == "" {
			return fmt.Errorf("%w: condition %v has no attribute name", ErrInvalidItem, c)
		}
		return nil
	}
	attr, v, ok := c.Match()
	if !ok {
		return nil
	}
	if attr == "" {
		return fmt.Errorf("%w: condition %v has no attribute name", ErrInvalidItem, c)
	}
	if err := (Item{PK: "x", attr: v}).Validate(); err != nil {
		return fmt.Errorf("condition %v: %w", c, err)
	}
	return nil
}

// RequiresAbsent reports whether the condition holds only for a missing item.
func (c Condition) RequiresAbsent() bool { return c.kind == condAbsent }

// Lacks returns the attribute an existing item must not have, if any
// ([IfPresentWithout]).
func (c Condition) Lacks() (attr string, ok bool) {
	if c.kind == condPresentWithout {
		return c.attr, true
	}
	return "", false
}

// Match returns the attribute and value an existing item must hold, if any.
func (c Condition) Match() (attr string, v any, ok bool) {
	if c.kind == condEquals {
		return c.attr, c.value, true
	}
	return "", nil, false
}

// Holds evaluates the condition against current (nil when absent). Backends
// that cannot push the condition down to the server evaluate it with this
// inside their own atomic section.
func (c Condition) Holds(current Item) bool {
	if current == nil {
		return c.kind == condAlways || c.kind == condAbsent
	}
	switch c.kind {
	case condAlways, condPresent:
		return true
	case condAbsent:
		return false
	case condPresentWithout:
		_, has := current[c.attr]
		return !has
	default:
		v, ok := current[c.attr]
		return ok && Equal(v, c.value)
	}
}

// String describes the condition for errors and dry runs.
func (c Condition) String() string {
	switch c.kind {
	case condAbsent:
		return "item absent"
	case condPresent:
		return "item present"
	case condEquals:
		return fmt.Sprintf("%s = %v", c.attr, c.value)
	case condPresentWithout:
		return fmt.Sprintf("item present without %s", c.attr)
	case condAlways:
		// Below.
	}
	return "always"
}
