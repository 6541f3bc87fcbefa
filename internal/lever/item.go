package lever

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// What the items of the kinds that keep a version (a breaker override, the
// fleet's freeze) share: the condition a write of one is made on, the
// version it carries next, the approval document on it, and how a change
// request holds the kind's params. Each kind's contract names its
// attributes; these rules read them the same way for every kind.

// Unchanged is the condition under which a write may replace or delete
// the item raw, read from the store, whose version attribute is attr and
// whose parsed version is version. When raw carries a write_id, that it
// still carries it: the token is unique to the write that stored the item,
// so the condition holds for that item only (a version restarts at 1 after
// a clear, a token never repeats). Otherwise, that its version attribute is
// still exactly as stored — the same value and type when present (a
// malformed "1.5", 9e125 or string included), absent when it was absent.
// Conditioning on the parsed version instead would never match a malformed
// one, and the item could not be cleared. An item built in memory (nil raw)
// conditions on version.
func Unchanged(raw store.Item, attr string, version int64) store.Condition {
	if raw == nil {
		return store.IfEquals(attr, version)
	}
	if w := raw.WriteID(); w != "" {
		return store.IfEquals(store.WriteIDAttr, w)
	}
	v, ok := raw[attr]
	if !ok {
		return store.IfPresentWithout(attr)
	}
	return store.IfEquals(attr, v)
}

// NextVersion is the version the next write of the item raw carries: one
// more than its version when well formed (malformed false); for a
// malformed one, one more than the whole part of raw's attr when that is a
// sensible number, else 1 (a new sequence).
func NextVersion(raw store.Item, attr string, version int64, malformed bool) int64 {
	if !malformed {
		return version + 1
	}
	if f, ok := raw.Float(attr); ok && f >= 0 && f < 1<<53 {
		return int64(math.Floor(f)) + 1
	}
	return 1
}

// Decode is the item it decoded by from, as a pointer: nil, with no error,
// when it is absent (nil).
func Decode[T any](it store.Item, from func(store.Item) (T, error)) (*T, error) {
	if it == nil {
		return nil, nil
	}
	v, err := from(it)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// ApprovalOf is the approval document an item keeps in attr (how the
// table's change policy let its last write through, the same document as
// its audit record's); nil when it has none or it cannot be read.
func ApprovalOf(it store.Item, attr string) *audit.Approval {
	doc, ok := it[attr].(string)
	if !ok {
		return nil
	}
	var a audit.Approval
	if json.Unmarshal([]byte(doc), &a) != nil || a.Decision == "" {
		return nil
	}
	return &a
}

// SetApproval keeps a (nil: none asked) on the item it, in attr.
func SetApproval(it store.Item, attr string, a *audit.Approval) {
	if a == nil {
		return
	}
	if doc, err := json.Marshal(a); err == nil {
		it[attr] = string(doc)
	}
}

// Image is v as a change request keeps what was read ([Plan.Image]): its
// JSON document, null when absent or when it cannot be encoded.
func Image(v any) json.RawMessage {
	doc, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return doc
}

// DecodeParams decodes a kind's params as a change request holds them
// (raw, nil for none) into w, strictly: a member w does not name is an
// error.
func DecodeParams(raw json.RawMessage, w any) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(w)
}

// NoParams refuses params of an action that takes none: raw is nil, {}
// or null.
func NoParams(action string, raw json.RawMessage) error {
	if len(raw) > 0 && string(raw) != "{}" && string(raw) != "null" {
		return fmt.Errorf("%s takes no params", action)
	}
	return nil
}

// WireTime is an instant as a change request holds it: RFC 3339 in UTC, to
// the millisecond.
func WireTime(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano) }

// ParseWireTime reads what [WireTime] wrote under the member name.
func ParseWireTime(name, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: %v", name, s, err)
	}
	return t, nil
}
