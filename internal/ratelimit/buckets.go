package ratelimit

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"sort"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Audit actions recorded for bucket changes.
const (
	ActionReset = "ratelimit.reset"
	ActionDrain = "ratelimit.drain"
	ActionSet   = "ratelimit.set"
)

// MaxDrainHold bounds how long a timed drain keeps a client refused.
const MaxDrainHold = time.Hour

// ErrDrainHold matches the error of [CheckDrainHold].
var ErrDrainHold = errors.New("drain hold out of range")

// CheckDrainHold reports whether a drain may hold a client refused for d:
// from 0 (just empty the bucket) to [MaxDrainHold]. [Change.Validate]
// applies it to every drain; the error matches [ErrDrainHold] and
// [ErrInvalidTokens].
func CheckDrainHold(d time.Duration) error {
	if d < 0 || d > MaxDrainHold {
		return fmt.Errorf("%w: drain for %s: give a duration from 0 to %s", drainHoldError{}, human.Duration(d), human.Duration(MaxDrainHold))
	}
	return nil
}

// drainHoldError is ErrInvalidTokens that also matches ErrDrainHold.
type drainHoldError struct{}

func (drainHoldError) Error() string { return ErrInvalidTokens.Error() }
func (drainHoldError) Is(target error) bool {
	return target == ErrDrainHold || target == ErrInvalidTokens
}

// ClampDrainHold returns d within [CheckDrainHold]'s range, for a drain
// that restores a level (a drill's rollback) rather than one an operator
// asked for.
func ClampDrainHold(d time.Duration) time.Duration { return min(max(d, 0), MaxDrainHold) }

// MutationAttempts bounds how often an operator change re-reads and retries
// when data-plane takes keep changing the bucket between read and write.
// Every refused attempt means a take landed in between, so an operator's
// reset during a burst of N takes needs at most N+1 attempts; 25 lets a reset
// land during a flood while still ending if the bucket never settles.
const MutationAttempts = 25

// ErrBusy reports a bucket that changed on every attempt of an operator
// change; it also matches store.ErrConditionFailed.
var ErrBusy = fmt.Errorf("bucket changed on every attempt (the client is sending requests right now): %w", store.ErrConditionFailed)

// ErrInvalidTokens reports a token count an operator may not set.
var ErrInvalidTokens = errors.New("invalid token count")

// ListStore is what [Buckets] needs of a store.
type ListStore interface {
	Get(ctx context.Context, pk string) (store.Item, error)
	Transact(ctx context.Context, c store.Change) error
	Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error]
}

var _ ListStore = store.Store(nil)

// Buckets is the rate-limit lever's rules on a store: it inspects
// buckets (one, a listing) and, as a [lever.Kind] (kind.go), decides what
// an operator's reset, drain or set does to one. The lever service
// (internal/lever) writes what it decides: the bucket conditional on the
// updated_at it read and stamped strictly later (so it composes with
// concurrent data-plane takes and with any contract-following reader),
// with its audit record, in one store change ([store.Apply]).
type Buckets struct {
	store  ListStore
	clock  clock.Clock
	limits Limits
	// segments is the scan width of the near-client search a refused
	// drain or set makes ([Buckets.WithScanSegments]).
	segments int
}

// WithScanSegments returns the service scanning in n parallel segments
// when it looks for the client nearest to one without a bucket.
func (b *Buckets) WithScanSegments(n int) *Buckets {
	c := *b
	c.segments = n
	return &c
}

// NewBuckets returns Buckets on s evaluating buckets with limits l (zero
// fields take the LLD's defaults). A nil clk means the wall clock.
func NewBuckets(s ListStore, clk clock.Clock, l Limits) (*Buckets, error) {
	l = l.WithDefaults()
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Buckets{store: s, clock: clk, limits: l}, nil
}

// Limits returns the limits buckets are evaluated with.
func (b *Buckets) Limits() Limits { return b.limits }

// Get returns client's bucket status now. A missing item is a full bucket
// (Exists false), not an error.
func (b *Buckets) Get(ctx context.Context, client string) (Status, error) {
	if err := ValidateClientID(client); err != nil {
		return Status{}, err
	}
	bk, err := b.read(ctx, client)
	if err != nil {
		return Status{}, err
	}
	return StatusOf(client, bk, b.limits, b.clock.Now()), nil
}

// Item reads client's bucket item as stored (nil when absent): what a
// change decided on it is conditional on ([lever.Change.Read]).
func (b *Buckets) Item(ctx context.Context, client string) (store.Item, error) {
	it, err := b.store.Get(ctx, Key(client))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read bucket %s: %w", client, err)
	}
	return it, nil
}

func (b *Buckets) read(ctx context.Context, client string) (*Bucket, error) {
	it, err := b.Item(ctx, client)
	if err != nil {
		return nil, err
	}
	return lever.Decode(it, BucketFromItem)
}

// SortBy orders a listing.
type SortBy string

// Listing orders.
const (
	// SortClient orders by client id.
	SortClient SortBy = "client"
	// SortTokens orders by refilled tokens, emptiest first.
	SortTokens SortBy = "tokens"
	// SortUpdated orders by updated_at, most recent first.
	SortUpdated SortBy = "updated"
)

// SortOrders lists the accepted orders.
var SortOrders = []SortBy{SortClient, SortTokens, SortUpdated}

// ListQuery selects and orders buckets.
type ListQuery struct {
	// Throttled keeps only clients whose next request would be refused.
	Throttled bool
	// Sort orders the result; empty means SortClient.
	Sort SortBy
	// Limit keeps the first Limit buckets after sorting; zero keeps all.
	Limit int
	// Segments scans the table in that many parallel segments (DynamoDB).
	Segments int
	// Progress, when set, is called with the running count of items examined.
	Progress func(examined int)
	// Rate, when set, paces the scan (read units per second, DynamoDB).
	Rate *store.ScanRate
	// Stats, when set, counts the items examined and the capacity consumed.
	Stats *store.ReadStats
}

// ListResult is a listing.
type ListResult struct {
	// Buckets are the matching buckets, sorted, at most Limit of them.
	Buckets []Status
	// ListStats counts the matching buckets before Limit, and lists the
	// items under the rl# prefix that are not valid buckets.
	ListStats
}

// List scans every bucket and evaluates it now ([Buckets.Each],
// collected).
func (b *Buckets) List(ctx context.Context, q ListQuery) (ListResult, error) {
	var res ListResult
	stats, err := b.Each(ctx, q, func(s Status) bool { res.Buckets = append(res.Buckets, s); return true })
	if err != nil {
		return ListResult{}, err
	}
	res.ListStats = stats
	return res, nil
}

// ListStats is what a listing met besides the buckets it yielded.
type ListStats struct {
	// Matched counts matching buckets before Limit.
	Matched int
	// Malformed lists items under the rl# prefix that are not valid
	// buckets; they are skipped, not fatal.
	Malformed []error
}

// Each scans every bucket, evaluates it now, and passes the matching ones
// to yield in q.Sort order, at most q.Limit of them, as early as the order
// allows: on a store that scans in key order (the embedded store) the
// client order is the scan's, so each bucket is passed as it is read, and
// a listing holds a page of the scan; otherwise the buckets are sorted
// first, holding only the q.Limit first (a heap), or without a limit every
// matching bucket's status (not its item). It scans to the end to count
// Matched.
func (b *Buckets) Each(ctx context.Context, q ListQuery, yield func(Status) bool) (ListStats, error) {
	switch q.Sort {
	case "":
		q.Sort = SortClient
	case SortClient, SortTokens, SortUpdated:
	default:
		return ListStats{}, fmt.Errorf("list buckets: unknown sort order %q", q.Sort)
	}
	now := b.clock.Now()
	var stats ListStats
	inOrder := b.InScanOrder(q)
	var held statusHeap
	held.less = lessBy(q.Sort)
	stopped := false
	for it, err := range b.store.Scan(ctx, store.ScanQuery{Prefix: KeyPrefix, Segments: q.Segments, Progress: q.Progress,
		Rate: q.Rate, Stats: q.Stats}) {
		if err != nil {
			return ListStats{}, fmt.Errorf("list buckets: %w", err)
		}
		bk, err := BucketFromItem(it)
		if err != nil {
			stats.Malformed = append(stats.Malformed, err)
			continue
		}
		s := StatusOf(bk.Client, &bk, b.limits, now)
		if q.Throttled && !s.Throttled() {
			continue
		}
		stats.Matched++
		switch {
		case inOrder:
			if !stopped && (q.Limit == 0 || stats.Matched <= q.Limit) {
				stopped = !yield(s)
			}
		case q.Limit > 0:
			held.keep(s, q.Limit)
		default:
			held.s = append(held.s, s)
		}
	}
	if inOrder {
		return stats, nil
	}
	sort.Slice(held.s, func(i, j int) bool { return held.less(held.s[i], held.s[j]) })
	for _, s := range held.s {
		if !yield(s) {
			break
		}
	}
	return stats, nil
}

// InScanOrder reports whether [Buckets.Each] passes q's buckets as it
// reads them: in client order, on a store that scans in key order, in one
// segment.
func (b *Buckets) InScanOrder(q ListQuery) bool {
	return (q.Sort == SortClient || q.Sort == "") && store.ScansInKeyOrder(b.store) && q.Segments <= 1
}

// lessBy is the order by: whether a comes before b.
func lessBy(by SortBy) func(a, b Status) bool {
	return func(a, b Status) bool {
		switch by {
		case SortTokens:
			if a.Tokens != b.Tokens {
				return a.Tokens < b.Tokens
			}
		case SortUpdated:
			if a.Stored.UpdatedAtMs != b.Stored.UpdatedAtMs {
				return a.Stored.UpdatedAtMs > b.Stored.UpdatedAtMs
			}
		case SortClient:
			// The tie-break below is the whole order.
		}
		return a.Client < b.Client
	}
}

// statusHeap holds the first n statuses by less met so far: a heap whose
// root is the last of them.
type statusHeap struct {
	s    []Status
	less func(a, b Status) bool
}

func (h *statusHeap) Len() int           { return len(h.s) }
func (h *statusHeap) Less(i, j int) bool { return h.less(h.s[j], h.s[i]) }
func (h *statusHeap) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *statusHeap) Push(x any)         { h.s = append(h.s, x.(Status)) }
func (h *statusHeap) Pop() any {
	last := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return last
}

// keep takes s into the first n, dropping the last of them when s comes
// before it.
func (h *statusHeap) keep(s Status, n int) {
	if len(h.s) < n {
		heap.Push(h, s)
		return
	}
	if h.less(s, h.s[0]) {
		h.s[0] = s
		heap.Fix(h, 0)
	}
}

// Op is an operator change to a bucket.
type Op uint8

const (
	// OpReset refills the bucket to capacity.
	OpReset Op = iota
	// OpDrain empties the bucket (tokens 0), or holds it below zero for a
	// while so the client is refused for that long.
	OpDrain
	// OpSet sets the token count.
	OpSet
)

// String returns reset, drain or set.
func (o Op) String() string {
	switch o {
	case OpReset:
		return "reset"
	case OpDrain:
		return "drain"
	case OpSet:
		return "set"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Action returns the audit action of the op.
func (o Op) Action() string {
	return map[Op]string{OpReset: ActionReset, OpDrain: ActionDrain, OpSet: ActionSet}[o]
}

// Change asks for one operator change.
type Change struct {
	Op     Op
	Client string
	// Tokens is the count OpSet writes (0 to capacity).
	Tokens float64
	// HoldFor, for OpDrain, keeps the client refused for that long: the bucket
	// is written with tokens = -HoldFor*rate, so it climbs back to 0 after
	// HoldFor and admits again one token later. Zero writes tokens 0.
	HoldFor time.Duration
	// always writes the bucket even when it already is in the requested
	// state: a change with writes attached always lands.
	always bool
}

// Validate checks the change against limits l before anything is read.
func (c Change) Validate(l Limits) error {
	if err := ValidateClientID(c.Client); err != nil {
		return err
	}
	l = l.WithDefaults()
	switch c.Op {
	case OpSet:
		if math.IsNaN(c.Tokens) || c.Tokens < 0 || c.Tokens > l.Capacity {
			return fmt.Errorf("%w %g: give a number from 0 to the capacity, %g (to keep a client refused for a while, use drain --for)",
				ErrInvalidTokens, c.Tokens, l.Capacity)
		}
	case OpDrain:
		if err := CheckDrainHold(c.HoldFor); err != nil {
			return err
		}
	case OpReset:
	default:
		return fmt.Errorf("unknown bucket change %v", c.Op)
	}
	return nil
}

// target returns the stored token count the change writes.
func (c Change) target(l Limits) float64 {
	switch c.Op {
	case OpReset:
		return l.Capacity
	case OpDrain:
		// Round to the microtoken so a duration like 1.1s writes -1.1, not
		// -1.1000000000000001.
		debt := math.Round(c.HoldFor.Seconds()*l.RefillPerSecond*1e6) / 1e6
		if debt == 0 {
			return 0 // not -0
		}
		return -debt
	case OpSet:
		// The count given, below.
	}
	return c.Tokens
}

// ChangeResult says what a change did.
type ChangeResult struct {
	Change Change
	// Before is the bucket as read (the last read, after retries).
	Before Status
	// After is the bucket as written (or as it would be: a dry run);
	// equal to Before when nothing changed.
	After Status
	// Changed is false when the bucket was already in the requested state
	// (reset of a full or missing bucket, drain of an empty one, set to the
	// current level); nothing was written and nothing recorded.
	Changed bool
	// Malformed is set when the item read was not a valid bucket (the data
	// plane fails open on it); the change replaces it. Before then has
	// Exists set and no stored values.
	Malformed error
}

// decide computes what c does at now to the bucket read as raw (nil:
// absent): the result and, when the bucket changes, the bucket to write
// (without its write_id) and the condition it is written on: that
// updated_at is still the value read (or that the item is still absent),
// with updated_at stamped max(now, read+1) so the write is ordered after
// every take it follows. A malformed item is replaced, conditional on it
// being unchanged.
func (b *Buckets) decide(c Change, raw store.Item, now time.Time) (ChangeResult, Bucket, store.Condition) {
	res := ChangeResult{Change: c}
	want := c.target(b.limits)
	var cur *Bucket
	if raw != nil {
		bk, err := BucketFromItem(raw)
		if err != nil {
			// The data plane fails open on this item: replacing it is the repair.
			res.Malformed = err
		} else {
			cur = &bk
		}
	}
	res.Before = StatusOf(c.Client, cur, b.limits, now)
	if res.Malformed == nil && !c.always && noop(c.Op, res.Before, want) {
		res.After = res.Before
		return res, Bucket{}, store.Condition{}
	}
	next := Bucket{Client: c.Client, Tokens: want, UpdatedAtMs: now.UnixMilli()}
	cond := store.IfAbsent()
	switch {
	case cur != nil:
		next.UpdatedAtMs = max(next.UpdatedAtMs, cur.UpdatedAtMs+1)
		cond = store.IfEquals(AttrUpdatedAt, cur.UpdatedAtMs)
	case raw != nil:
		res.Before.Exists = true
		if u, ok := raw.Int(AttrUpdatedAt); ok {
			next.UpdatedAtMs = max(next.UpdatedAtMs, u+1)
		}
		cond = unchanged(raw)
	}
	next.TTL = b.limits.TTL(next.UpdatedAtMs, next.Tokens)
	res.After = StatusOf(c.Client, &next, b.limits, now)
	res.Changed = true
	return res, next, cond
}

// unchanged is the best condition on a malformed item: that one of its
// attributes (updated_at, else tokens, else any) still holds what was read.
func unchanged(raw store.Item) store.Condition {
	for _, attr := range append([]string{AttrUpdatedAt, AttrTokens}, raw.Keys()...) {
		if v, ok := raw[attr]; ok && attr != store.PK {
			return store.IfEquals(attr, v)
		}
	}
	return store.IfPresent()
}

// noop reports whether the bucket already is what the change asks for.
func noop(op Op, before Status, want float64) bool {
	switch op {
	case OpReset:
		return before.Full()
	case OpDrain:
		// Only exact: a bucket at 0.4 tokens still gains its next token sooner
		// than a drained one.
		return before.Exists && before.Stored.Tokens == want && before.Tokens == want
	case OpSet:
		// The refilled level already at the count, below.
	}
	return before.Tokens == want
}

// AuditView is how a bucket appears in audit records' before/after.
type AuditView struct {
	Exists      bool    `json:"exists"`
	Tokens      float64 `json:"tokens"`
	UpdatedAtMs int64   `json:"updated_at,omitempty"`
	Refilled    float64 `json:"refilled_tokens"`
	// Malformed describes an invalid item that was replaced.
	Malformed string `json:"malformed,omitempty"`
}

// AuditBefore is the bucket as read, as the change's audit record shows it.
func (r ChangeResult) AuditBefore() AuditView { return auditView(r.Before, r.Malformed) }

func auditView(s Status, malformed error) AuditView {
	v := AuditView{Exists: s.Exists, Tokens: s.Stored.Tokens, UpdatedAtMs: s.Stored.UpdatedAtMs, Refilled: s.Tokens}
	if malformed != nil {
		v = AuditView{Exists: true, Malformed: malformed.Error()}
	}
	return v
}
