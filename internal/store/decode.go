package store

import (
	"fmt"
	"time"
)

// Epoch-millisecond bounds of the times an item holds: from 1970 to the end
// of year 9999, the range RFC 3339 can write.
const (
	MinEpochMs int64 = 0
	MaxEpochMs int64 = 253402300799999
)

// Decoder reads one item's attributes by its contract, collecting what does
// not follow it as [Problem]s instead of stopping at the first: a reader
// decodes a malformed item as far as it goes, so it can still be shown,
// and cleared or replaced in one command. Every lever kind's item is read
// with one (a breaker override, the fleet's freeze).
type Decoder struct {
	it Item
	// Problems lists the attributes that do not follow the contract, in
	// the order they were read; empty for a well-formed item.
	Problems []Problem
}

// NewDecoder returns a decoder of it.
func NewDecoder(it Item) *Decoder { return &Decoder{it: it} }

// Problem records that attr is malformed: what was found there ([Found];
// the pk as an S), then want, what the contract asks.
func (d *Decoder) Problem(attr, want string) {
	found := Found(d.it, attr)
	if attr == PK {
		found = fmt.Sprintf("S %q", d.it.PK())
	}
	d.Problems = append(d.Problems, Problem{PK: d.it.PK(), Attribute: attr, Problem: "found " + found + ", " + want})
}

// Str reads a string attribute: required, or optional (absent is "").
// It is "" when the attribute is not a string.
func (d *Decoder) Str(attr string, required bool) string {
	v, present := d.it[attr]
	if !present && !required {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.Problem(attr, "want S")
	}
	return s
}

// Whole reads a number that must be a whole int64. It records want as the
// problem when the attribute is absent (and required), not a number, or not
// whole; ok is false then, and when an optional attribute is absent.
func (d *Decoder) Whole(attr string, required bool, want string) (int64, bool) {
	switch v := d.it[attr].(type) {
	case int64:
		return v, true
	case nil:
		if _, present := d.it[attr]; !present && !required {
			return 0, false
		}
	}
	d.Problem(attr, want)
	return 0, false
}

// Time reads a time stored as whole epoch milliseconds between
// [MinEpochMs] and [MaxEpochMs], in UTC; the zero time when it is absent
// (and optional) or malformed.
func (d *Decoder) Time(attr string, required bool) time.Time {
	const want = "want N, whole epoch milliseconds between 1970 and 9999"
	ms, ok := d.Whole(attr, required, want)
	if !ok {
		return time.Time{}
	}
	if ms < MinEpochMs || ms > MaxEpochMs {
		d.Problem(attr, want)
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Version reads the required version attribute attr of a lever's item: a
// whole number from 1; zero when it is malformed.
func (d *Decoder) Version(attr string) int64 {
	const want = "want N, a whole number from 1"
	v, ok := d.Whole(attr, true, want)
	if ok && v < 1 {
		d.Problem(attr, want)
		return 0
	}
	return v
}

// TTL checks the optional ttl attribute ([TTLAttr]): whole epoch seconds
// when present.
func (d *Decoder) TTL() {
	if _, ok := d.it[TTLAttr]; ok {
		d.Whole(TTLAttr, false, "want N, epoch seconds")
	}
}

// HasProblem reports whether problems name attribute attr.
func HasProblem(problems []Problem, attr string) bool {
	for _, p := range problems {
		if p.Attribute == attr {
			return true
		}
	}
	return false
}
