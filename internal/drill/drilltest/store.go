package drilltest

import (
	"context"
	"fmt"
	"iter"
	"sort"
	"strings"
	"sync"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Store is an in-memory [store.Store] with the contract's conditions. It
// starts no goroutines, so it works inside synctest bubbles. Its fields
// inject failures by key prefix ("": none); set them before the run, or
// within [Store.Inject] while it runs.
type Store struct {
	mu    sync.Mutex
	items map[string]store.Item
	// FailGet and FailDelete make a Get or a delete fail (unavailable).
	FailGet, FailDelete string
	// LostPut makes the next put succeed but report an error, like a
	// write whose answer was lost.
	LostPut string
	// DenyPut refuses a put, as IAM would (nothing written).
	DenyPut string
}

var _ store.Store = (*Store)(nil)

// NewStore returns an empty store.
func NewStore() *Store { return &Store{items: map[string]store.Item{}} }

// Inject runs f, which sets the failures, under the store's lock.
func (m *Store) Inject(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

// Has reports whether an item is stored under pk.
func (m *Store) Has(pk string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.items[pk]
	return ok
}

func (m *Store) has(prefix, pk string) bool { return prefix != "" && strings.HasPrefix(pk, prefix) }

// Get returns a copy of the item under pk.
func (m *Store) Get(ctx context.Context, pk string) (store.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.has(m.FailGet, pk) {
		return nil, fmt.Errorf("get %s: %w", pk, store.ErrUnavailable)
	}
	it, ok := m.items[pk]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", pk, store.ErrNotFound)
	}
	return it.Clone(), nil
}

// Put writes item when cond holds: a change of one put, with its
// injected failures.
func (m *Store) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	return m.Transact(ctx, store.Change{Ops: []store.Op{store.PutOp(item, cond)}})
}

// Delete deletes the item under pk when cond holds: a change of one delete.
func (m *Store) Delete(ctx context.Context, pk string, cond store.Condition) error {
	return m.Transact(ctx, store.Change{Ops: []store.Op{store.DeleteOp(pk, cond)}})
}

// Transact applies a change all or nothing, with the injected failures:
// a denied put or a failing delete writes nothing; a put with the LostPut
// prefix lands and reports a lost answer.
func (m *Store) Transact(ctx context.Context, c store.Change) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("change %s: %w: %w", c.Token, store.ErrNotSent, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lost := false
	for _, op := range c.Ops {
		pk := op.PK()
		if op.Put != nil && m.has(m.DenyPut, pk) {
			return fmt.Errorf("change %s: put %s: %w", c.Token, pk, store.ErrCredentials)
		}
		if op.Put == nil && !op.IsCheck() && m.has(m.FailDelete, pk) {
			return fmt.Errorf("change %s: delete %s: %w", c.Token, pk, store.ErrUnavailable)
		}
		lost = lost || op.Put != nil && m.has(m.LostPut, pk)
	}
	if err := c.ApplyTo(m.items, func(it store.Item) store.Item { return store.Normalize(it).Clone() }); err != nil {
		return err
	}
	if lost {
		m.LostPut = ""
		return fmt.Errorf("change %s: response lost: %w", c.Token, store.ErrUnavailable)
	}
	return nil
}

// Scan yields copies of the items under q.Prefix, in key order.
func (m *Store) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		m.mu.Lock()
		var out []store.Item
		for k, it := range m.items {
			if strings.HasPrefix(k, q.Prefix) {
				out = append(out, it.Clone())
			}
		}
		m.mu.Unlock()
		sort.Slice(out, func(i, j int) bool { return out[i].PK() < out[j].PK() })
		for _, it := range out {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// Describe names the store as the journal records it.
func (m *Store) Describe() string { return "memory store" }

// Close does nothing.
func (m *Store) Close() error { return nil }
