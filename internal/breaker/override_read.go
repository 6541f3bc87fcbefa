package breaker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/kosha-platform/koshactl/internal/store"
)

// OverrideIndexKey is the value of the overrides index attribute
// (store.IndexOverrides.Attr) on every override item koshactl writes: the
// sparse index holds every override's key and nothing else.
const OverrideIndexKey = "breaker"

// noticeSink says once that a reader fell back to a scan.
type noticeSink struct {
	fn   func(msg string)
	once sync.Once
}

func (n *noticeSink) say(err error) {
	n.once.Do(func() {
		if n.fn != nil {
			n.fn(fmt.Sprintf("note: %v; listing overrides with a scan of the whole table meanwhile", err))
		}
	})
}

// SetNotice sets where Overrides says, once, that it fell back to scanning
// the table because the overrides index is missing (with the fix). nil (the
// default) says nothing.
func (s *Overrides) SetNotice(notice func(msg string)) { s.notices.fn = notice }

// ListFor returns every override item (active or expired), sorted by
// dependency, reading by key: the known dependencies' items and the keys
// the overrides index holds, in one strongly consistent batch read. Its cost
// is the number of overrides, not the size of the table.
//
// Consistency: the known dependencies are read consistently, so a list right
// after a force or clear of one of them shows it. The index (a DynamoDB
// global secondary index, eventually consistent) only says which other keys
// to read; their items are then read consistently too, so nothing stale is
// shown. What the index may lag behind (typically under a second) is an
// override of an unknown dependency written a moment ago by someone else.
//
// A store without indexes, or a table created before the index, is scanned
// instead (and the missing index reported once, see [Overrides.SetNotice]).
func (s *Overrides) ListFor(ctx context.Context, known []string) ([]Override, error) {
	list, _, err := s.ListForWith(ctx, known, nil)
	return list, err
}

// ListForWith is [Overrides.ListFor] reading the items under extra in the
// same batch read (the table's policy, for the dashboard): they are
// returned by key, absent ones left out, and never taken for overrides.
func (s *Overrides) ListForWith(ctx context.Context, known, extra []string) ([]Override, map[string]store.Item, error) {
	keys := make([]string, 0, len(known)+len(extra))
	for _, dep := range known {
		if ValidateDependency(dep) == nil {
			keys = append(keys, OverrideKey(dep))
		}
	}
	scan := func() ([]Override, map[string]store.Item, error) {
		list, err := s.scanList(ctx)
		if err != nil || len(extra) == 0 {
			return list, nil, err
		}
		items, err := store.GetMany(ctx, s.store, extra)
		if err != nil {
			return nil, nil, fmt.Errorf("list overrides: %w", err)
		}
		return list, items, nil
	}
	qr, ok := s.store.(store.Querier)
	if !ok {
		return scan()
	}
	for it, err := range qr.Query(ctx, store.IndexQuery{Index: store.IndexOverrides, Key: OverrideIndexKey}) {
		if errors.Is(err, store.ErrIndexMissing) {
			s.notices.say(err)
			return scan()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("list overrides: %w", err)
		}
		keys = append(keys, it.PK())
	}
	extras := map[string]store.Item{}
	for _, k := range extra {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	items, err := store.GetMany(ctx, s.store, keys)
	if err != nil {
		return nil, nil, fmt.Errorf("list overrides: %w", err)
	}
	for _, k := range extra {
		if it, ok := items[k]; ok {
			extras[k] = it
			delete(items, k)
		}
	}
	list, err := overridesFrom(slices.Collect(maps.Values(items)))
	return list, extras, err
}

// BackfillReport says what [Overrides.Backfill] found and did.
type BackfillReport struct {
	// Examined counts the override items read.
	Examined int `json:"examined"`
	// Updated counts the items that lacked the index attribute and were (or,
	// in a dry run, would be) rewritten with it.
	Updated int `json:"updated"`
	// Skipped counts items without a version to make the rewrite
	// conditional on; `breaker list` reports them, clear or replace them.
	Skipped int `json:"skipped"`
	// Unindexed lists the items left out of the index, and why: a pk longer
	// than an index's sort key may be (store.MaxIndexedPKBytes).
	Unindexed []store.Unindexed `json:"unindexed,omitempty"`
}

// Backfill adds the index attribute to override items written before the
// index existed (or by a tool that does not set it), so [Overrides.ListFor]
// finds them by index. Each rewrite is conditional on the version read, so
// an override changed meanwhile is left to its writer. With dryRun it only
// counts.
func (s *Overrides) Backfill(ctx context.Context, dryRun bool) (BackfillReport, error) {
	var rep BackfillReport
	var todo []store.Item
	for it, err := range s.store.Scan(ctx, store.ScanQuery{Prefix: OverridePrefix}) {
		if err != nil {
			return rep, fmt.Errorf("backfill overrides: %w", err)
		}
		rep.Examined++
		if it.Str(store.IndexOverrides.Attr) == OverrideIndexKey {
			continue
		}
		if _, ok := it[attrVersion]; !ok {
			rep.Skipped++
			continue
		}
		if err := store.IndexedPKError(store.IndexOverrides, it.PK()); err != nil {
			rep.Unindexed = append(rep.Unindexed, store.Unindexed{PK: it.PK(), Why: err.Error()})
			continue
		}
		rep.Updated++
		todo = append(todo, it)
	}
	if dryRun {
		return rep, nil
	}
	for _, it := range todo {
		next := it.Clone()
		next[store.IndexOverrides.Attr] = OverrideIndexKey
		err := s.store.Put(ctx, next, store.IfEquals(attrVersion, it[attrVersion]))
		if err != nil && !errors.Is(err, store.ErrConditionFailed) {
			return rep, fmt.Errorf("backfill override %s: %w", it.PK(), err)
		}
	}
	return rep, nil
}
