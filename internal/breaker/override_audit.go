package breaker

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Audit actions recorded for override changes.
const (
	ActionForceOpen = "breaker.force-open"
	ActionClear     = "breaker.clear"
)

// AuditState is how an override appears in audit records' before/after: a
// JSON object of the item's attributes exactly as stored (pk left out: it
// is the record's subject), strings as JSON strings and numbers as JSON
// numbers. For an override read from the store that is its Raw item, so a
// malformed item is recorded as it was, not as koshactl parsed it; for one
// about to be written, the item written. nil gives nil (no item).
func AuditState(o *Override) any {
	if o == nil {
		return nil
	}
	it := o.Raw
	if it == nil {
		it = o.Item()
	}
	doc := make(map[string]any, len(it))
	for k, v := range it {
		if k != store.PK {
			doc[k] = v
		}
	}
	return doc
}

// OverrideFromAuditState decodes an override from an audit record's before
// or after document ([AuditState]'s output) for dependency: nil for an absent
// document (no item). Numbers come back as the store holds them (whole ones
// as integers), so the override decodes exactly as the item it records.
func OverrideFromAuditState(dependency string, doc json.RawMessage) (*Override, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("the audit record's override of %s is not a JSON object: %w", dependency, err)
	}
	it := store.Item{store.PK: OverrideKey(dependency)}
	for k, v := range m {
		if k == store.PK {
			continue
		}
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = i
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		it[k] = v
	}
	return lever.Decode(it, OverrideFromItem)
}

// SameWrite reports whether a and b are the same stored write of an
// override: the same write_id when both carry one, else the same version,
// created_at and actor.
func SameWrite(a, b Override) bool {
	if a.WriteID != "" && b.WriteID != "" {
		return a.WriteID == b.WriteID
	}
	return a.Version == b.Version && a.CreatedAt.Equal(b.CreatedAt) && a.Actor == b.Actor
}
