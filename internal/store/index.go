package store

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// MaxBatchGet is the most keys one BatchGetItem request may carry
// (DynamoDB's limit); backends split longer key lists into requests of at
// most this many.
const MaxBatchGet = 100

// BatchGetter is a store that reads many items by key in few round trips.
// Both backends implement it; consumers that hold a plain [Store] fall back
// to one Get per key (see [GetMany]).
type BatchGetter interface {
	// BatchGet returns the items stored under pks, keyed by pk, with strongly
	// consistent reads. Absent keys are absent from the map (not an error).
	// Duplicate keys are read once. It either returns every item or an error:
	// keys the backend leaves unprocessed are retried with backoff.
	BatchGet(ctx context.Context, pks []string) (map[string]Item, error)
}

// GetMany reads pks through s's BatchGet when it has one, or one Get per key
// otherwise (the sandbox's in-memory store).
func GetMany(ctx context.Context, s interface {
	Get(ctx context.Context, pk string) (Item, error)
}, pks []string) (map[string]Item, error) {
	if bg, ok := s.(BatchGetter); ok {
		return bg.BatchGet(ctx, pks)
	}
	out := make(map[string]Item, len(pks))
	for _, pk := range pks {
		it, err := s.Get(ctx, pk)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[pk] = it
	}
	return out, nil
}

// GetFew is [GetMany] where one key is one GetItem, the cheapest read of
// one item (a policy read beside a scan or a lever's own read).
func GetFew(ctx context.Context, s interface {
	Get(ctx context.Context, pk string) (Item, error)
}, pks []string) (map[string]Item, error) {
	if len(pks) != 1 {
		return GetMany(ctx, s, pks)
	}
	it, err := s.Get(ctx, pks[0])
	switch {
	case errors.Is(err, ErrNotFound):
		return map[string]Item{}, nil
	case err != nil:
		return nil, err
	}
	return map[string]Item{pks[0]: it}, nil
}

// Index is a secondary index of the control table. Items that carry the
// string attribute Attr (and Sort, when the index names one) are indexed
// under its value, sorted by pk or by Sort; items without them are not in
// the index (a sparse index). An index sorted by pk has a range of pks
// (audit records' time-ordered keys) as a range of the index.
type Index struct {
	// Name is the index's name (the DynamoDB GSI name).
	Name string
	// Attr is the string attribute the index is partitioned by.
	Attr string
	// Sort is the string attribute the index sorts by (its sort key); ""
	// sorts by pk. An item is in the index only when it carries both
	// attributes.
	Sort string
	// KeysOnly is true when the index holds only keys (DynamoDB projection
	// KEYS_ONLY); readers then read the items themselves by key. Otherwise
	// every attribute is projected.
	KeysOnly bool
}

// SortAttr is the attribute ix sorts by: Sort, or [PK].
func (ix Index) SortAttr() string {
	if ix.Sort != "" {
		return ix.Sort
	}
	return PK
}

// The control table's indexes (docs/contracts/store.md). Their attributes are
// additive: the data plane reads items by pk and ignores them.
var (
	// IndexAuditDay holds audit records by UTC day ("2026-12-01").
	IndexAuditDay = Index{Name: "audit-by-day", Attr: "ix_audit_day"}
	// IndexAuditSubject holds audit records by subject ("breaker#openai").
	IndexAuditSubject = Index{Name: "audit-by-subject", Attr: "ix_audit_subject"}
	// IndexAuditActor holds audit records by actor.
	IndexAuditActor = Index{Name: "audit-by-actor", Attr: "ix_audit_actor"}
	// IndexOverrides holds the keys of breaker override items (Attr is
	// "breaker" on every one of them).
	IndexOverrides = Index{Name: "overrides", Attr: "ix_override", KeysOnly: true}
	// IndexLists holds what a list reads in one query, whole items: audit
	// records in two partitions ("audit#0", "audit#1"), each sorted by time
	// ("<epoch ms>#<id>", whatever the record's pk prefix), and every
	// breaker override in one ("breaker", sorted by pk).
	IndexLists = Index{Name: "lists", Attr: "ix_list", Sort: "ix_list_sort"}
)

// Indexes lists every index of the control table, in the order `store init`
// and `store migrate` create them (and the deployment templates' IndexCount
// declares them: a new index goes last).
var Indexes = []Index{IndexAuditDay, IndexAuditSubject, IndexAuditActor, IndexOverrides, IndexLists}

// ErrIndexMissing reports a query on an index the table does not have yet
// (a table created before the index existed): run `koshactl store migrate`.
var ErrIndexMissing = errors.New("index missing")

// IndexQuery selects items of one index partition for [Querier.Query].
type IndexQuery struct {
	Index Index
	// Key is the value of Index.Attr to read.
	Key string
	// From and To bound the items' sort key (pk, or the index's Sort
	// attribute), both inclusive; empty is unbounded.
	From, To string
	// Descending yields the highest sort key first.
	Descending bool
	// Limit stops after that many items; zero reads the whole range. A
	// backend asks for no more than Limit items, so a limited query examines
	// what it yields.
	Limit int
	// Stats, when set, counts what the query examined.
	Stats *ReadStats
}

// Querier is a store that answers [IndexQuery]s. Index reads on DynamoDB
// are eventually consistent (a write shows in a global secondary index
// typically within a second); readers that need the latest state read the
// items themselves by key afterwards. A query on an index the table lacks
// yields an error wrapping [ErrIndexMissing].
type Querier interface {
	Query(ctx context.Context, q IndexQuery) iter.Seq2[Item, error]
}

// ConsistentQuerier is a [Querier] whose index reads are strongly
// consistent and yield whole items, keys-only indexes too (the embedded
// store): what a query returned is the item as stored, so a reader reads
// none of it again by key.
type ConsistentQuerier interface {
	Querier
	// QueriesConsistent is true; it marks the implementation.
	QueriesConsistent() bool
}

// QueriesConsistent reports whether s's index queries are consistent and
// yield whole items ([ConsistentQuerier]).
func QueriesConsistent(s any) bool {
	c, ok := s.(ConsistentQuerier)
	return ok && c.QueriesConsistent()
}

// KeyOrderScanner is a store whose scans yield items in pk order (the
// embedded store), so a listing in that order can print each item as it
// is read. DynamoDB's do not (a scan follows the partitions' hash order).
type KeyOrderScanner interface {
	// ScansInKeyOrder is true; it marks the implementation.
	ScansInKeyOrder() bool
}

// ScansInKeyOrder reports whether s's scans yield items in pk order
// ([KeyOrderScanner]).
func ScansInKeyOrder(s any) bool {
	o, ok := s.(KeyOrderScanner)
	return ok && o.ScansInKeyOrder()
}

// ReadStats counts what reads examined. It is safe for concurrent use; the
// zero value is ready.
type ReadStats struct {
	examined atomic.Int64
	requests atomic.Int64
	// capacity is in thousandths of a read unit.
	capacity atomic.Int64
}

// Add records one request that examined n items and consumed units read
// capacity units (zero when the backend does not meter capacity).
func (s *ReadStats) Add(n int, units float64) {
	if s == nil {
		return
	}
	s.requests.Add(1)
	s.examined.Add(int64(n))
	s.capacity.Add(int64(units * 1000))
}

// Examined returns the items examined so far.
func (s *ReadStats) Examined() int64 { return s.examined.Load() }

// Requests returns the requests made so far.
func (s *ReadStats) Requests() int64 { return s.requests.Load() }

// Capacity returns the read capacity units consumed so far.
func (s *ReadStats) Capacity() float64 { return float64(s.capacity.Load()) / 1000 }

// ScanRate paces a scan to a number of read capacity units per second. A
// page's cost is known only after it is read, so the pacer waits before the
// next page until the units consumed so far fit the rate; a scan's average
// rate stays at or under it. It is safe for concurrent use by the segments of
// one scan.
type ScanRate struct {
	// UnitsPerSecond is the cap; zero or less means no cap.
	UnitsPerSecond float64
	// Now and Sleep are the time source; nil means the wall clock. Tests
	// pass a fake clock's.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	start    atomic.Pointer[time.Time]
	consumed atomic.Int64 // thousandths of a unit
}

// Wait blocks until consuming units more keeps the scan under its rate. It
// records the units as consumed.
func (r *ScanRate) Wait(ctx context.Context, units float64) error {
	if r == nil || r.UnitsPerSecond <= 0 {
		return nil
	}
	now := r.now()
	start := r.start.Load()
	if start == nil {
		r.start.CompareAndSwap(nil, &now)
		start = r.start.Load()
	}
	total := float64(r.consumed.Add(int64(units*1000))) / 1000
	due := start.Add(time.Duration(total / r.UnitsPerSecond * float64(time.Second)))
	if d := due.Sub(now); d > 0 {
		return r.sleep(ctx, d)
	}
	return nil
}

func (r *ScanRate) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *ScanRate) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	return clock.Sleep(ctx, nil, d)
}
