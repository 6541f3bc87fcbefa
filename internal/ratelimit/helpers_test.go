package ratelimit_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// memStore is an in-memory store honoring the contract's conditions
// atomically. It counts calls and can be told to fail.
type memStore struct {
	mu    sync.Mutex
	items map[string]store.Item
	gets  int
	puts  int
	// failGet / failPut, when set, are returned by every Get / Put.
	failGet, failPut error
	// returnCurrent makes refused Puts carry the current item, as a backend
	// that can tell does.
	returnCurrent bool
}

func newMemStore() *memStore { return &memStore{items: map[string]store.Item{}} }

func (m *memStore) Get(_ context.Context, pk string) (store.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.failGet != nil {
		return nil, m.failGet
	}
	it, ok := m.items[pk]
	if !ok {
		return nil, store.ErrNotFound
	}
	return it.Clone(), nil
}

func (m *memStore) Put(_ context.Context, it store.Item, cond store.Condition) error {
	if err := it.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.failPut != nil {
		return m.failPut
	}
	cur := m.items[it.PK()]
	if !cond.Holds(cur) {
		ce := &store.ConditionError{PK: it.PK()}
		if m.returnCurrent && cur != nil {
			ce.Current = cur.Clone()
		}
		return ce
	}
	m.items[it.PK()] = store.Normalize(it)
	return nil
}

func (m *memStore) Scan(_ context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
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

func (m *memStore) item(pk string) store.Item {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.items[pk].Clone()
}

func (m *memStore) set(it store.Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[it.PK()] = store.Normalize(it)
}

func (m *memStore) counts() (gets, puts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gets, m.puts
}

// stored decodes client's bucket from s, failing the test when it is missing
// or malformed.
func stored(t *testing.T, s interface {
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

func newLimiter(t *testing.T, s ratelimit.BucketStore, v variant, clk clock.Clock) taker {
	t.Helper()
	l, err := newTaker(s, v, ratelimit.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func take(t *testing.T, l taker, client string) ratelimit.Decision {
	t.Helper()
	d, err := l.Take(context.Background(), client)
	if err != nil {
		t.Fatalf("take %s: %v", client, err)
	}
	return d
}

// epoch is t0 as a time.
var epoch = time.UnixMilli(t0).UTC()

// errOutage is a store failure for fail-open tests.
var errOutage = errors.Join(store.ErrUnavailable, errors.New("connection refused"))
