package sandbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// Event kinds core-api writes to its outbox.
const (
	EventDisputeRaised      = "dispute.raised"
	EventTransactionFlagged = "transaction.flagged"
)

// maxOutboxEvents bounds the published events the outbox remembers (for
// idempotency replays); pending ones are never dropped.
const maxOutboxEvents = 10000

// OutboxEvent is one row of core-api's ops.outbox: written in the same
// transaction as the dispute or flag, published to SQS later by the relay.
type OutboxEvent struct {
	EventID string `json:"event_id"`
	Kind    string `json:"kind"`
	// RecordID is the dispute or flag the event announces.
	RecordID string `json:"record_id"`
	// IdempotencyKey is the caller's key; a repeated key returns this row.
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	TransactionID  string    `json:"transaction_id"`
	CreatedAt      time.Time `json:"created_at"`
	// PublishedAt is zero while the event waits in the outbox.
	PublishedAt time.Time `json:"published_at,omitzero"`
}

// Outbox is core-api's transactional outbox (LLD §8: SQS down leaves
// raise_dispute and flag_transaction_for_review unaffected, events stay in
// ops.outbox until SQS recovers). It is shared by the fleet, like the
// database it stands for; its relay publishes to the simulated SQS, whose
// /admin/chaos/sqs knob takes it down.
type Outbox struct {
	clock clock.Clock

	mu        sync.Mutex
	byKey     map[string]*OutboxEvent
	events    []*OutboxEvent // oldest first
	pending   int
	published uint64
	failed    uint64
}

func newOutbox(clk clock.Clock) *Outbox {
	return &Outbox{clock: clk, byKey: map[string]*OutboxEvent{}}
}

// write commits a record and its event, or returns the row an earlier
// write with the same idempotency key committed (duplicate true).
func (o *Outbox) write(kind, prefix, transactionID, key string) (OutboxEvent, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if key != "" {
		if e, ok := o.byKey[kind+"\x00"+key]; ok {
			return *e, true
		}
	}
	e := &OutboxEvent{EventID: newID("evt"), Kind: kind, RecordID: newID(prefix), IdempotencyKey: key,
		TransactionID: transactionID, CreatedAt: o.clock.Now().UTC()}
	o.events = append(o.events, e)
	o.pending++
	if key != "" {
		o.byKey[kind+"\x00"+key] = e
	}
	o.trim()
	return *e, false
}

// trim forgets the oldest published events beyond maxOutboxEvents. Call
// with mu held.
func (o *Outbox) trim() {
	for len(o.events) > maxOutboxEvents && !o.events[0].PublishedAt.IsZero() {
		e := o.events[0]
		if e.IdempotencyKey != "" {
			delete(o.byKey, e.Kind+"\x00"+e.IdempotencyKey)
		}
		o.events[0] = nil
		o.events = o.events[1:]
	}
}

// relay publishes the pending events in one batch to sqs, the queue
// downstream (LLD §8: while SQS is down they stay pending, and the writes
// that made them are unaffected). An attempt is bounded by timeout.
func (o *Outbox) relay(ctx context.Context, sqs Downstream, timeout time.Duration) int {
	if o.Stats().Pending == 0 {
		return 0
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	err := sqs.Call(pctx, nil)
	cancel()
	if err != nil {
		o.mu.Lock()
		o.failed++
		o.mu.Unlock()
		return 0
	}
	now := o.clock.Now().UTC()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, e := range o.events {
		if e.PublishedAt.IsZero() {
			e.PublishedAt = now
			n++
		}
	}
	o.pending -= n
	o.published += uint64(n)
	o.trim()
	return n
}

// run relays to sqs every interval until ctx ends.
func (o *Outbox) run(ctx context.Context, sqs Downstream, interval time.Duration, wg *sync.WaitGroup) {
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				o.relay(ctx, sqs, interval)
			}
		}
	})
}

// OutboxStats counts the outbox's events, and the relay's batches SQS
// refused.
type OutboxStats struct {
	Pending       int    `json:"pending"`
	Published     uint64 `json:"published"`
	PublishErrors uint64 `json:"publish_errors"`
}

// Stats returns the outbox's counts.
func (o *Outbox) Stats() OutboxStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return OutboxStats{Pending: o.pending, Published: o.published, PublishErrors: o.failed}
}

// newID returns prefix_ and 12 random hex digits (not secret: ids of
// simulated records).
func newID(prefix string) string {
	return fmt.Sprintf("%s_%012x", prefix, rand.Uint64()&(1<<48-1)) //nolint:gosec // G404: ids of simulated records, not secrets
}

// Deferral is a screening request recorded for later because screening-sim
// was unavailable (LLD §8).
type Deferral struct {
	ID         string    `json:"deferral_id"`
	Name       string    `json:"name"`
	Country    string    `json:"country,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
	Instance   string    `json:"instance"`
}

// maxDeferrals bounds the deferrals kept; older ones are counted only.
const maxDeferrals = 10000

// deferrals holds screenings recorded for later.
type deferrals struct {
	mu    sync.Mutex
	items []Deferral
	total uint64
}

func (d *deferrals) add(x Deferral) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.total++
	if len(d.items) == maxDeferrals {
		copy(d.items, d.items[1:])
		d.items = d.items[:maxDeferrals-1]
	}
	d.items = append(d.items, x)
}

func (d *deferrals) count() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}
