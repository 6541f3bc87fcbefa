package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// PK is the name of the partition key attribute every item carries.
const PK = "pk"

// TTLAttr is the attribute DynamoDB's TTL feature is pointed at (epoch
// seconds). It is garbage collection only: expiry is always checked on read.
const TTLAttr = "ttl"

// Store is the contract of a control-plane item store. Consumers should
// declare the narrower interface they use (for example just Get and Put) where
// they use it; this one exists so backends can be checked against the whole
// contract.
type Store interface {
	// Get returns the item stored under pk, or an error wrapping ErrNotFound.
	Get(ctx context.Context, pk string) (Item, error)
	// Put writes item (which must carry PK) if cond holds, replacing any
	// previous item whole. A failed condition returns a *ConditionError.
	Put(ctx context.Context, item Item, cond Condition) error
	// Delete removes the item under pk if cond holds. Deleting an absent item
	// with an Always condition succeeds.
	Delete(ctx context.Context, pk string, cond Condition) error
	// Transact writes a change all or nothing ([Change]); call it through
	// [Apply], which settles a lost answer.
	Transact(ctx context.Context, c Change) error
	// Scan yields every item whose pk starts with q.Prefix, in no particular
	// order. Iteration stops at the first error, which is yielded.
	Scan(ctx context.Context, q ScanQuery) iter.Seq2[Item, error]
	// Describe says which store this is, for "acted on" lines and errors.
	Describe() string
	// Close releases the store's resources.
	Close() error
}

// ScanQuery selects items for [Store.Scan].
type ScanQuery struct {
	// Prefix keeps items whose pk starts with it. Empty keeps all.
	Prefix string
	// Segments asks the backend to scan in that many parallel segments where
	// it can (DynamoDB parallel scan). Zero or one scans serially.
	Segments int
	// PageSize bounds items per backend request. Zero lets the backend choose.
	PageSize int
	// Progress, when set, is called after each page with the running count of
	// items examined (not only those matched). It may be called from several
	// goroutines when Segments > 1.
	Progress func(examined int)
	// Rate, when set, paces the scan to its read units per second (DynamoDB;
	// the embedded store has no capacity to protect and ignores it).
	Rate *ScanRate
	// Stats, when set, counts the items examined and the read capacity the
	// scan consumed.
	Stats *ReadStats
}

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotFound: no item under that key.
	ErrNotFound = exitcode.New(exitcode.NotFound, "item not found")
	// ErrConditionFailed: the write's condition did not hold; nothing was written.
	ErrConditionFailed = exitcode.New(exitcode.Conflict, "condition failed")
	// ErrUnavailable: the store could not be reached or answered with a server error.
	ErrUnavailable = exitcode.New(exitcode.Unavailable, "store unavailable")
	// ErrThrottled: the store refused for capacity; retry later. It also
	// matches ErrUnavailable: errors.Is(ErrThrottled, ErrUnavailable) is true,
	// so callers that only care whether the store answered need one check.
	ErrThrottled error = throttledError{}
	// ErrTableMissing: the table (or database) does not exist.
	ErrTableMissing = exitcode.New(exitcode.Unavailable, "table does not exist")
	// ErrCredentials: credentials are missing, expired or not allowed.
	ErrCredentials = exitcode.New(exitcode.Auth, "credentials missing, expired or denied")
	// ErrInvalidItem: the item cannot be stored (no pk, unsupported value type).
	ErrInvalidItem = errors.New("invalid item")
)

// throttledError is ErrThrottled's type: a distinct value that also matches
// ErrUnavailable.
type throttledError struct{}

func (throttledError) Error() string { return "store throttled the request" }

// Is makes errors.Is(ErrThrottled, ErrUnavailable) true, and its kind
// ErrUnavailable's.
func (throttledError) Is(target error) bool { return errors.Is(ErrUnavailable, target) }

// Limits every backend enforces, so an item accepted by one is accepted by
// the other. They are DynamoDB's.
const (
	// MaxPKBytes is the longest partition key, in UTF-8 bytes.
	MaxPKBytes = 2048
	// MaxIndexedPKBytes is the longest pk of an item in an index sorted by
	// pk: DynamoDB caps a sort key at 1,024 bytes (a longer one makes the
	// write fail). Items with a longer pk stay out of those indexes.
	MaxIndexedPKBytes = 1024
	// MaxSortKeyBytes is the longest value of an index's Sort attribute
	// (DynamoDB's cap on a sort key).
	MaxSortKeyBytes = 1024
	// MaxIndexKeyBytes is the longest value of an index's attribute (the
	// index's partition key, capped at 2,048 bytes like a table's). DynamoDB
	// also refuses an empty string there, and any type but the index's
	// (string): the write fails.
	MaxIndexKeyBytes = 2048
	// MaxItemBytes is the largest item, counted as DynamoDB counts it:
	// attribute names plus values (strings in UTF-8 bytes, numbers at their
	// largest encoding of 21 bytes).
	MaxItemBytes = 400 * 1024
	// numberBytes is the size DynamoDB charges a number at most.
	numberBytes = 21
)

// Number magnitudes DynamoDB can store; [Item.Validate] rejects others
// (zero is always fine).
const (
	// MaxNumber bounds the magnitude of a number from above (exclusive).
	MaxNumber = 1e126
	// MinNumber bounds the magnitude of a non-zero number from below.
	MinNumber = 1e-130
)

// ConditionError reports a write refused by its condition. Current is the item
// as the store held it when the write was refused, when the backend can tell
// (nil when the item was absent or the backend cannot say).
type ConditionError struct {
	PK      string
	Current Item
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("write to %q refused: %v", e.PK, ErrConditionFailed)
}

// Is makes errors.Is(err, ErrConditionFailed) true, and its kind
// ErrConditionFailed's.
func (e *ConditionError) Is(target error) bool { return errors.Is(ErrConditionFailed, target) }

// Item is one stored record. Values are string, int64, float64 or [Number]
// (DynamoDB's S and N: use plain literals of those types), or one of the
// types of DynamoDB's other eight ([Bool], [Null], [Binary], [List], [Map],
// [StringSet], [NumberSet], [BinarySet]), which koshactl's contracts never
// name but an item written by another tool may hold: they are read and
// written back whole, so no item fails to read for an attribute koshactl
// does not know. A float64 that holds a whole
// number is stored as a number like any other and may read back as int64;
// use [Item.Float] to read numbers that may be fractional.
type Item map[string]any

// Number is a stored number kept as its decimal text. Backends return one for
// a number that neither int64 nor float64 holds exactly (DynamoDB keeps 38
// significant digits: 1.00000000000000000001, 99999999999999999999), so a
// write conditional on the value read ([IfEquals]) matches the number as
// stored, not a rounded copy. It may also be written, with the same limits
// as any number. [Item.Int] and [Item.Float] read it, rounded; it encodes
// as a JSON number.
type Number string

// MarshalJSON writes the number's text as a JSON number (JSON's spelling:
// no "+", no bare leading or trailing ".").
func (n Number) MarshalJSON() ([]byte, error) {
	if _, ok := parseDecimal(string(n)); !ok {
		return nil, fmt.Errorf("store.Number %q is not a decimal number", string(n))
	}
	s := strings.TrimPrefix(string(n), "+")
	sign := ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", rest
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i:]
	}
	intPart, frac, dot := strings.Cut(mant, ".")
	if intPart = strings.TrimLeft(intPart, "0"); intPart == "" {
		intPart = "0"
	}
	if dot && frac != "" {
		intPart += "." + frac
	}
	return []byte(sign + intPart + exp), nil
}

// maxDigits is how many significant digits DynamoDB keeps.
const maxDigits = 38

// decimal is a number's exact value: 0.digits × 10^exp, digits without
// leading or trailing zeros ("" for zero, whose exp is 0).
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal reads decimal text ([+-]digits[.digits][e[+-]digits], as
// DynamoDB numbers are written) into its exact value, without rounding and
// without allocating beyond the digits.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	start, point, digits := i, -1, 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			digits++
			continue
		}
		if c == '.' && point < 0 {
			point = i
			continue
		}
		break
	}
	if digits == 0 {
		return decimal{}, false
	}
	mant := s[start:i]
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' || i+1 == len(s) {
			return decimal{}, false
		}
		rest := s[i+1:]
		if rest[0] == '+' || rest[0] == '-' {
			rest = rest[1:]
		}
		if rest == "" || len(rest) > 6 || strings.TrimLeft(rest, "0123456789") != "" {
			return decimal{}, false
		}
		e, _ := strconv.Atoi(s[i+1:])
		d.exp = e
	}
	intLen := len(mant)
	if point >= 0 {
		intLen = point - start
	}
	all := mant
	if point >= 0 {
		all = mant[:intLen] + mant[intLen+1:]
	}
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	all = strings.TrimRight(all[lead:], "0")
	if all == "" {
		return decimal{}, true
	}
	d.digits = all
	d.exp += intLen - lead
	return d, true
}

// significantDigits counts the significant digits of decimal text without
// allocating; ok is false for text that is not decimal (hex, Inf, NaN).
func significantDigits(s string) (n int, ok bool) {
	first, last, pos := -1, -1, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if c != '0' {
				if first < 0 {
					first = pos
				}
				last = pos
			}
			pos++
		case c == '.', (c == '+' || c == '-') && i == 0:
		case c == 'e' || c == 'E':
			i = len(s)
		default:
			return 0, false
		}
	}
	if first < 0 {
		return 0, true
	}
	return last - first + 1, true
}

// magnitudeOK reports whether d is zero or within DynamoDB's range
// (10^(exp-1) <= |d| < 10^exp).
func (d decimal) magnitudeOK() bool {
	return d.digits == "" || (d.exp <= 126 && d.exp >= -129)
}

// PK returns the item's partition key, or "".
func (it Item) PK() string { s, _ := it[PK].(string); return s }

// Str returns the string attribute name, or "" when absent or not a string.
func (it Item) Str(name string) string { s, _ := it[name].(string); return s }

// Int returns the numeric attribute name truncated to int64.
func (it Item) Int(name string) (int64, bool) {
	switch v := it[name].(type) {
	case int64:
		return v, true
	case float64:
		return int64(v), true
	case Number:
		f, ok := v.float()
		return int64(f), ok
	}
	return 0, false
}

// Float returns the numeric attribute name as float64 (a [Number] rounded to
// the nearest).
func (it Item) Float(name string) (float64, bool) {
	switch v := it[name].(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case Number:
		return v.float()
	}
	return 0, false
}

// float is n rounded to the nearest float64.
func (n Number) float() (float64, bool) {
	if _, ok := parseDecimal(string(n)); !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// Clone returns a shallow copy (values are immutable types).
func (it Item) Clone() Item {
	out := make(Item, len(it))
	for k, v := range it {
		out[k] = v
	}
	return out
}

// Keys returns the attribute names in sorted order.
func (it Item) Keys() []string { return slices.Sorted(maps.Keys(it)) }

// Validate checks that the item can be stored: a non-empty string pk of at
// most [MaxPKBytes], values of the store's types only (see [Item]), floats
// finite and within DynamoDB's range ([MinNumber] to [MaxNumber] in
// magnitude, or zero), sets non-empty and without repeats, lists and maps
// nested at most 32 deep, a total size within [MaxItemBytes], valid UTF-8
// in every string and name, and index attributes DynamoDB takes
// ([IndexKeyError], [IndexedPKError]). Empty strings are fine outside the
// pk and the index attributes.
// int is accepted and normalised to int64 by [Normalize].
func (it Item) Validate() error {
	pk := it.PK()
	if pk == "" {
		return fmt.Errorf("%w: missing string %q attribute", ErrInvalidItem, PK)
	}
	if !utf8.ValidString(pk) {
		return fmt.Errorf("%w: pk %q is not valid UTF-8", ErrInvalidItem, pk)
	}
	if len(pk) > MaxPKBytes {
		return fmt.Errorf("%w: pk is %d bytes, more than %d", ErrInvalidItem, len(pk), MaxPKBytes)
	}
	for _, ix := range Indexes {
		if v, ok := it[ix.Sort]; ok && ix.Sort != "" {
			if err := SortKeyError(ix, v); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidItem, err)
			}
		}
		v, ok := it[ix.Attr]
		if !ok {
			continue
		}
		if err := IndexKeyError(ix, v); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidItem, err)
		}
		if err := IndexedPKError(ix, pk); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidItem, err)
		}
	}
	size := 0
	for k, v := range it {
		if k == "" {
			return fmt.Errorf("%w: empty attribute name", ErrInvalidItem)
		}
		if !utf8.ValidString(k) {
			return fmt.Errorf("%w: attribute name %q is not valid UTF-8", ErrInvalidItem, k)
		}
		n, err := validateValue(v, 0)
		if err != nil {
			return fmt.Errorf("%w: attribute %q: %w", ErrInvalidItem, k, err)
		}
		size += len(k) + n
	}
	if size > MaxItemBytes {
		return fmt.Errorf("%w: item %q is %d bytes, more than %d", ErrInvalidItem, pk, size, MaxItemBytes)
	}
	return nil
}

// IndexKeyError says why DynamoDB would refuse v as the value of ix's
// attribute, the index's partition key: not a string, empty, or longer than
// [MaxIndexKeyBytes]. It is nil for a value the index takes. Writers leave
// such a value out (the item stays out of that index); [Item.Validate]
// refuses an item carrying one.
func IndexKeyError(ix Index, v any) error {
	return keyValueError(ix.Attr, "key", ix.Name, v, MaxIndexKeyBytes)
}

// SortKeyError says why DynamoDB would refuse v as the value of ix's Sort
// attribute, the index's sort key: not a string, empty, or longer than
// [MaxSortKeyBytes]. DynamoDB refuses such a value whether or not the item
// carries the index's partition attribute, so [Item.Validate] refuses it
// too.
func SortKeyError(ix Index, v any) error {
	return keyValueError(ix.Sort, "sort key", ix.Name, v, MaxSortKeyBytes)
}

// keyValueError says why DynamoDB would refuse v as attribute attr, the
// key (role) of index: not a string, empty, or longer than most bytes.
func keyValueError(attr, role, index string, v any, most int) error {
	s, ok := v.(string)
	switch {
	case !ok:
		return fmt.Errorf("%s (the %s of index %s) is a %T, not a string", attr, role, index, v)
	case s == "":
		return fmt.Errorf("%s (the %s of index %s) is empty", attr, role, index)
	case len(s) > most:
		return fmt.Errorf("%s (the %s of index %s) is %d bytes, more than %d", attr, role, index, len(s), most)
	}
	return nil
}

// IndexedPKError says why an item with this pk cannot be in index ix: the
// index sorts by pk, and pk is longer than a sort key may be
// ([MaxIndexedPKBytes]). It is nil for a pk the index takes, and for every
// pk when ix sorts by its own attribute.
func IndexedPKError(ix Index, pk string) error {
	if ix.Sort == "" && len(pk) > MaxIndexedPKBytes {
		return fmt.Errorf("pk is %d bytes, more than the %d an item in index %s may have (its sort key)", len(pk), MaxIndexedPKBytes, ix.Name)
	}
	return nil
}

// Unindexed is an item a backfill left out of an index, and why (an
// [IndexKeyError] or [IndexedPKError]): indexed reads miss it there, scans
// find it.
type Unindexed struct {
	PK  string `json:"pk"`
	Why string `json:"why"`
}

// validateFloat checks that x is a number DynamoDB can store.
func validateFloat(x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return errors.New("not a finite number")
	}
	if a := math.Abs(x); a != 0 && (a >= MaxNumber || a < MinNumber) {
		return fmt.Errorf("%g is outside the storable range %g to %g", x, MinNumber, MaxNumber)
	}
	return nil
}

// validate checks that n is a number DynamoDB can store: decimal text of at
// most 38 significant digits, zero or of magnitude from 1e-130 to below 1e126.
func (n Number) validate() error {
	d, ok := parseDecimal(string(n))
	if !ok {
		return fmt.Errorf("store.Number %q is not a decimal number", string(n))
	}
	if len(d.digits) > maxDigits {
		return fmt.Errorf("%s has %d significant digits, more than %d", string(n), len(d.digits), maxDigits)
	}
	if !d.magnitudeOK() {
		return fmt.Errorf("%s is outside the storable range %g to %g", string(n), MinNumber, MaxNumber)
	}
	return nil
}

// Normalize returns a copy of it with int values widened to int64. Backends
// call it after Validate.
func Normalize(it Item) Item {
	out := make(Item, len(it))
	for k, v := range it {
		if i, ok := v.(int); ok {
			v = int64(i)
		}
		out[k] = v
	}
	return out
}

// FormatNumber renders a numeric value the way both backends store it: integers
// in base 10, other floats in the shortest form that round-trips. Negative
// zero is written "0": DynamoDB numbers have no sign on zero, and "-0" would
// read back as the integer 0 and format differently the second time.
func FormatNumber(v any) (string, bool) {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		if x == 0 {
			return "0", true
		}
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case Number:
		return string(x), true
	}
	return "", false
}

// ParseNumber is FormatNumber's inverse: integer text that fits gives int64;
// other text float64, or a [Number] keeping the text when float64 cannot
// hold its value exactly (more than 15 significant digits that the nearest
// float64, formatted, does not reproduce).
func ParseNumber(s string) (any, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("parse number %q: %w", s, err)
	}
	// Up to 15 significant digits survive the round trip through float64.
	if n, ok := significantDigits(s); !ok || n <= 15 {
		return f, nil
	}
	d, ok := parseDecimal(s)
	if !ok {
		return f, nil
	}
	if back, _ := parseDecimal(strconv.FormatFloat(f, 'e', -1, 64)); back == d {
		return f, nil
	}
	return Number(s), nil
}

// numEqual compares two numbers' exact values.
func numEqual(a, b string) bool {
	ad, aok := parseDecimal(a)
	bd, bok := parseDecimal(b)
	if ad.digits == "" && bd.digits == "" {
		return aok && bok // zero has no sign
	}
	return aok && bok && ad == bd
}

// Equal reports whether two attribute values are equal under the store's
// rules: strings by content, numbers by numeric value whatever their Go type,
// lists element by element, maps by name, sets whatever their order; values
// of different DynamoDB types never.
func Equal(a, b any) bool {
	if i, ok := a.(int); ok {
		a = int64(i)
	}
	if i, ok := b.(int); ok {
		b = int64(i)
	}
	if isOther(a) || isOther(b) {
		return equalOther(a, b)
	}
	if as, ok := a.(string); ok {
		bs, ok := b.(string)
		return ok && as == bs
	}
	if _, ok := b.(string); ok {
		return false
	}
	_, aNum := a.(Number)
	_, bNum := b.(Number)
	if aNum || bNum {
		at, aok := FormatNumber(a)
		bt, bok := FormatNumber(b)
		return aok && bok && numEqual(at, bt)
	}
	af, aok := Item{"x": a}.Float("x")
	bf, bok := Item{"x": b}.Float("x")
	if !aok || !bok {
		return false
	}
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		return ai == bi
	}
	return af == bf
}
