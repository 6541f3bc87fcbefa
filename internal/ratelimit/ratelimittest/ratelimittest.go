package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// T0 is the tests' epoch in milliseconds: 2026-11-29T19:00:00Z.
const T0 int64 = 1_795_978_800_000

// Epoch is T0 as a time.
var Epoch = time.UnixMilli(T0).UTC()

// ErrOutage is a store failure, for fail-open tests.
var ErrOutage = errors.Join(store.ErrUnavailable, errors.New("connection refused"))

// MemStore is an in-memory store honoring the contract's conditions
// atomically. It counts calls and can be told to fail.
type MemStore struct {
	mu    sync.Mutex
	items map[string]store.Item
	gets  int
	puts  int
	// FailGet / FailPut, when set, are returned by every Get / Put and
	// Transact.
	FailGet, FailPut error
	// ReturnCurrent makes refused Puts carry the current item, as a backend
	// that can tell does (a refused Transact always does).
	ReturnCurrent bool
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{items: map[string]store.Item{}} }

// Get returns a copy of the item under pk, or store.ErrNotFound.
func (m *MemStore) Get(_ context.Context, pk string) (store.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.FailGet != nil {
		return nil, m.FailGet
	}
	it, ok := m.items[pk]
	if !ok {
		return nil, store.ErrNotFound
	}
	return it.Clone(), nil
}

// Put writes it when cond holds, atomically.
func (m *MemStore) Put(_ context.Context, it store.Item, cond store.Condition) error {
	if err := it.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.FailPut != nil {
		return m.FailPut
	}
	cur := m.items[it.PK()]
	if !cond.Holds(cur) {
		ce := &store.ConditionError{PK: it.PK()}
		if m.ReturnCurrent && cur != nil {
			ce.Current = cur.Clone()
		}
		return ce
	}
	m.items[it.PK()] = store.Normalize(it)
	return nil
}

// Transact applies c whole if every op's condition holds, else writes
// nothing and returns a *store.TxConflictError naming each refused op with
// the item as stored. It counts as one write.
func (m *MemStore) Transact(ctx context.Context, c store.Change) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("change %s: %w: %w", c.Token, store.ErrNotSent, err)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.FailPut != nil {
		return m.FailPut
	}
	return c.ApplyTo(m.items, store.Normalize)
}

// Scan yields copies of the items under q.Prefix.
func (m *MemStore) Scan(_ context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		m.mu.Lock()
		var out []store.Item
		for pk, it := range m.items {
			if strings.HasPrefix(pk, q.Prefix) {
				out = append(out, it.Clone())
			}
		}
		m.mu.Unlock()
		for i, it := range out {
			if q.Progress != nil {
				q.Progress(i + 1)
			}
			if !yield(it, nil) {
				return
			}
		}
	}
}

// Item returns a copy of the item under pk (nil when absent).
func (m *MemStore) Item(pk string) store.Item {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.items[pk].Clone()
}

// Set writes it unconditionally, normalized as a backend stores it.
func (m *MemStore) Set(it store.Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[it.PK()] = store.Normalize(it)
}

// Counts returns how many Gets and writes (Puts and Transacts) were made.
func (m *MemStore) Counts() (gets, puts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gets, m.puts
}

// Stored decodes client's bucket from s, failing the test when it is missing
// or malformed.
func Stored(t testing.TB, s interface {
	Get(context.Context, string) (store.Item, error)
}, client string) ratelimit.Bucket {
	t.Helper()
	it, err := s.Get(context.Background(), ratelimit.Key(client))
	if err != nil {
		t.Fatalf("read bucket %s: %v", client, err)
	}
	b, err := ratelimit.BucketFromItem(it)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Interfering runs OnGet once, after the first Get returns: another writer
// landing between a read and the write that depends on it.
type Interfering struct {
	*MemStore
	once  sync.Once
	OnGet func()
}

// Get reads from the MemStore, then runs OnGet the first time.
func (i *Interfering) Get(ctx context.Context, pk string) (store.Item, error) {
	it, err := i.MemStore.Get(ctx, pk)
	i.once.Do(i.OnGet)
	return it, err
}

// RefillLLD is the LLD pseudocode's formula, without the contract's clamp: a
// negative elapsed time refills backwards (flaw 2).
//
//	min(capacity, tokens + (now - updated_at) / 1000 * rate)
func RefillLLD(l ratelimit.Limits, tokens float64, updatedAtMs, nowMs int64) float64 {
	l = l.WithDefaults()
	return min(l.Capacity, tokens+float64(nowMs-updatedAtMs)/1000*l.RefillPerSecond)
}
