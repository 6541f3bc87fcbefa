// Package memstore provides an in-memory [store.Store] for the sandbox's
// tests and benchmarks: it follows the item-store contract (conditions,
// prefix scans, number canonicalisation) without a file or a server, so a
// benchmark can measure the gateway path apart from the store's cost.
//
// It passes the store conformance suite (internal/store/storetest). Its
// contents live as long as the value; nothing is persisted.
package memstore

import (
	"context"
	"fmt"
	"iter"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Store is an in-memory item store. It is safe for concurrent use.
type Store struct {
	mu    sync.RWMutex
	items map[string]store.Item
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{items: map[string]store.Item{}} }

// canonical returns it as a backend stores it: ints widened to int64 and
// every number as its text form (store.FormatNumber) reads back
// (store.ParseNumber): a whole float64 becomes int64 when its text fits one,
// a fractional one stays as it is. Below 2^53 it computes that directly
// rather than through the text.
func canonical(it store.Item) store.Item {
	out := make(store.Item, len(it))
	for k, v := range it {
		switch x := v.(type) {
		case int:
			v = int64(x)
		case float64:
			switch {
			case x != math.Trunc(x):
			case math.Abs(x) < 1<<53: // the shortest text of a whole float this small is exact
				v = int64(x)
			default: // larger: the text may round its digits, so go through it
				if text, ok := store.FormatNumber(x); ok {
					if n, err := store.ParseNumber(text); err == nil {
						v = n
					}
				}
			}
		}
		out[k] = v
	}
	return out
}

// Get returns a copy of the item under pk, or an error wrapping
// store.ErrNotFound.
func (s *Store) Get(ctx context.Context, pk string) (store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %q: %w", pk, err)
	}
	s.mu.RLock()
	it, ok := s.items[pk]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("get %q: %w", pk, store.ErrNotFound)
	}
	return it.Clone(), nil
}

// Put writes item if cond holds.
func (s *Store) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if err := item.Validate(); err != nil {
		return err
	}
	if err := cond.Validate(); err != nil {
		return err
	}
	it := canonical(item)
	pk := it.PK()
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[pk]
	if !ok {
		cur = nil
	}
	if !cond.Holds(cur) {
		return conditionError(pk, cur)
	}
	s.items[pk] = it
	return nil
}

// Delete removes the item under pk if cond holds.
func (s *Store) Delete(ctx context.Context, pk string, cond store.Condition) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %q: %w", pk, err)
	}
	if err := cond.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[pk]
	if !ok {
		cur = nil
	}
	if !cond.Holds(cur) {
		return conditionError(pk, cur)
	}
	delete(s.items, pk)
	return nil
}

func conditionError(pk string, cur store.Item) error {
	e := &store.ConditionError{PK: pk}
	if cur != nil {
		e.Current = cur.Clone()
	}
	return e
}

// Scan yields copies of the items whose pk starts with q.Prefix, in pk
// order, from a snapshot taken when iteration starts (so the loop may write).
func (s *Store) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, fmt.Errorf("scan %q: %w", q.Prefix, err))
			return
		}
		s.mu.RLock()
		snap := make([]store.Item, 0, len(s.items))
		for pk, it := range s.items {
			if strings.HasPrefix(pk, q.Prefix) {
				snap = append(snap, it.Clone())
			}
		}
		s.mu.RUnlock()
		sort.Slice(snap, func(i, j int) bool { return snap[i].PK() < snap[j].PK() })
		for i, it := range snap {
			if q.Progress != nil {
				q.Progress(i + 1)
			}
			if !yield(it, nil) {
				return
			}
		}
	}
}

// Len returns the number of items held.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// Describe returns "memory".
func (s *Store) Describe() string { return "memory" }

// Close does nothing; the contents stay readable.
func (s *Store) Close() error { return nil }

// Transact applies c whole if every op's condition holds, else writes
// nothing and returns a *store.TxConflictError naming each refused op.
func (s *Store) Transact(ctx context.Context, c store.Change) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("change %s: %w: %w", c.Token, store.ErrNotSent, err)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.ApplyTo(s.items, canonical)
}
