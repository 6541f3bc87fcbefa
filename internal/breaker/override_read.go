package breaker

import (
	"context"
	"errors"
	"fmt"
	"iter"
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

func (n *noticeSink) say(err error, meanwhile string) {
	n.once.Do(func() {
		if n.fn != nil {
			n.fn(fmt.Sprintf("note: %v; listing overrides %s meanwhile", err, meanwhile))
		}
	})
}

// SetNotice sets where Overrides says, once, that it read a slower way
// because an index is missing (with the fix): the overrides index, or a
// scan of the table. nil (the default) says nothing.
func (s *Overrides) SetNotice(notice func(msg string)) { s.notices.fn = notice }

// Each yields every override item (active or expired), sorted by
// dependency, as it reads them: the known dependencies' items read by key
// and every other override from the lists index, in one round trip, each
// item decoded once. A caller that handles each override as it comes lists
// any number in the memory of one page of the index (docs/contracts/store.md).
//
// Consistency: the known dependencies are read consistently, so a list right
// after a force or clear of one of them shows it. The others are as the
// index holds them: on DynamoDB a global secondary index, eventually
// consistent (typically under a second behind), so an override of an
// unknown dependency forced or cleared a moment ago by someone else may
// show as it was, or not yet. The embedded store's index reads are
// consistent, and it reads by key only the known dependencies the index
// did not return (items written without the index attributes).
//
// A table without the lists index is listed from the overrides index (its
// keys, then one consistent batch read of them), one without that either
// with a scan (the missing index reported once, see [Overrides.SetNotice]).
func (s *Overrides) Each(ctx context.Context, known []string) iter.Seq2[Override, error] {
	return func(yield func(Override, error) bool) {
		_, err := s.each(ctx, known, nil, func(o Override) bool { return yield(o, nil) })
		if err != nil && !errors.Is(err, errStopped) {
			yield(Override{}, err)
		}
	}
}

// ListForWith returns every override item (active or expired), sorted by
// dependency ([Overrides.Each], collected), and the items under extra, read
// in the same round trip (the table's policy, for the dashboard): they are
// returned by key, absent ones left out, and never taken for overrides.
// Its cost is the number of overrides, not the size of the table.
func (s *Overrides) ListForWith(ctx context.Context, known, extra []string) ([]Override, map[string]store.Item, error) {
	var list []Override
	extras, err := s.each(ctx, known, extra, func(o Override) bool { list = append(list, o); return true })
	if err != nil {
		return nil, nil, err
	}
	return list, extras, nil
}

// errStopped ends a listing whose consumer stopped.
var errStopped = errors.New("stopped")

// each passes every override to yield, sorted by dependency, and returns
// the items under extra; errStopped when yield stopped.
func (s *Overrides) each(ctx context.Context, known, extra []string, yield func(Override) bool) (map[string]store.Item, error) {
	var keys []string
	for _, dep := range known {
		if ValidateDependency(dep) == nil {
			keys = append(keys, OverrideKey(dep))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	qr, ok := s.store.(store.Querier)
	if !ok {
		return s.scanList(ctx, extra, yield)
	}
	extras, err := s.fromLists(ctx, qr, keys, extra, yield)
	if !errors.Is(err, store.ErrIndexMissing) {
		return extras, err
	}
	listsMissing := err
	extras, err = s.fromOverridesIndex(ctx, qr, keys, extra, yield)
	if errors.Is(err, store.ErrIndexMissing) {
		s.notices.say(err, "with a scan of the whole table")
		return s.scanList(ctx, extra, yield)
	}
	if err == nil {
		s.notices.say(listsMissing, "from the overrides index, then by key,")
	}
	return extras, err
}

// fromLists merges the lists index's overrides (sorted by pk, which is by
// dependency) with the known keys read by key, in one round trip: on
// DynamoDB the batch read of the known and extra keys goes out beside the
// query's first page, and the known dependencies' items replace the
// index's; on a store whose queries are consistent, the index's items are
// the items, and a known key the index passed over is read on its own.
// Nothing is yielded before the index answered, so a missing index is
// returned (store.ErrIndexMissing) with nothing yielded.
func (s *Overrides) fromLists(ctx context.Context, qr store.Querier, known, extra []string, yield func(Override) bool) (map[string]store.Item, error) {
	consistent := store.QueriesConsistent(s.store)
	batchKeys := extra
	if !consistent {
		batchKeys = append(slices.Clone(known), extra...)
	}
	type batch struct {
		items map[string]store.Item
		err   error
	}
	read := make(chan batch, 1)
	go func() {
		items, err := store.GetMany(ctx, s.store, batchKeys)
		read <- batch{items, err}
	}()
	next, stop := iter.Pull2(qr.Query(ctx, store.IndexQuery{Index: store.IndexLists, Key: OverrideIndexKey}))
	defer stop()
	first, firstErr, more := next()
	b := <-read
	if firstErr != nil {
		return nil, fmt.Errorf("list overrides: %w", firstErr)
	}
	if b.err != nil {
		return nil, fmt.Errorf("list overrides: %w", b.err)
	}
	extras := map[string]store.Item{}
	for _, k := range extra {
		if it, ok := b.items[k]; ok {
			extras[k] = it
		}
	}
	// byKey yields the known key k's item, read by key: from the batch
	// read, or (consistent store) on its own.
	byKey := func(k string) error {
		it, found := b.items[k]
		if consistent {
			var err error
			if it, err = s.store.Get(ctx, k); errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return fmt.Errorf("list overrides: %w", err)
			}
			found = true
		}
		if !found {
			return nil
		}
		o, err := OverrideFromItem(it)
		if err != nil {
			return err
		}
		if !yield(o) {
			return errStopped
		}
		return nil
	}
	isKnown := func(pk string) bool { _, ok := slices.BinarySearch(known, pk); return ok }
	k := 0 // the next known key not yet yielded
	for it, err := first, firstErr; more; it, err, more = next() {
		if err != nil {
			return nil, fmt.Errorf("list overrides: %w", err)
		}
		pk := it.PK()
		for ; k < len(known) && known[k] < pk; k++ {
			if err := byKey(known[k]); err != nil {
				return nil, err
			}
		}
		if isKnown(pk) && !consistent {
			continue // yielded from the consistent read
		}
		if k < len(known) && known[k] == pk {
			k++ // the index's item is the known key's (a consistent store)
		}
		o, err := OverrideFromItem(it)
		if err != nil {
			return nil, err
		}
		if !yield(o) {
			return nil, errStopped
		}
	}
	for ; k < len(known); k++ {
		if err := byKey(known[k]); err != nil {
			return nil, err
		}
	}
	return extras, nil
}

// fromOverridesIndex lists from the overrides index of a table without the
// lists index: its keys, then one consistent batch read of them, the known
// keys and extra.
func (s *Overrides) fromOverridesIndex(ctx context.Context, qr store.Querier, known, extra []string, yield func(Override) bool) (map[string]store.Item, error) {
	keys := slices.Clone(known)
	for it, err := range qr.Query(ctx, store.IndexQuery{Index: store.IndexOverrides, Key: OverrideIndexKey}) {
		if err != nil {
			return nil, fmt.Errorf("list overrides: %w", err)
		}
		keys = append(keys, it.PK())
	}
	for _, k := range extra {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	items, err := store.GetMany(ctx, s.store, keys)
	if err != nil {
		return nil, fmt.Errorf("list overrides: %w", err)
	}
	extras := map[string]store.Item{}
	for _, k := range extra {
		if it, ok := items[k]; ok {
			extras[k] = it
			delete(items, k)
		}
	}
	list, err := overridesFrom(slices.Collect(maps.Values(items)))
	if err != nil {
		return nil, err
	}
	for _, o := range list {
		if !yield(o) {
			return nil, errStopped
		}
	}
	return extras, nil
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
// index existed (or by a tool that does not set it), so [Overrides.ListForWith]
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
		if it.Str(store.IndexOverrides.Attr) == OverrideIndexKey && it.Str(store.IndexLists.Attr) == OverrideIndexKey &&
			it.Str(store.IndexLists.Sort) == it.PK() {
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
		for k, v := range indexAttrs(it.PK()) {
			next[k] = v
		}
		err := s.store.Put(ctx, next, store.IfEquals(attrVersion, it[attrVersion]))
		if err != nil && !errors.Is(err, store.ErrConditionFailed) {
			return rep, fmt.Errorf("backfill override %s: %w", it.PK(), err)
		}
	}
	return rep, nil
}

// indexAttrs are the attributes that place the override item pk in the
// overrides and lists indexes; none for a pk longer than an index sorted by
// pk (or the lists index's sort key) takes, which no dependency name makes.
func indexAttrs(pk string) map[string]string {
	if store.IndexedPKError(store.IndexOverrides, pk) != nil || store.SortKeyError(store.IndexLists, pk) != nil {
		return nil
	}
	return map[string]string{store.IndexOverrides.Attr: OverrideIndexKey, store.IndexLists.Attr: OverrideIndexKey, store.IndexLists.Sort: pk}
}
