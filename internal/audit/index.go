package audit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
)

// DayLayout is how a record's UTC day is written in the day index's key.
const DayLayout = "2006-01-02"

// indexAttrs are the attributes that place a record in the audit indexes
// (docs/contracts/audit-record.md). A subject or actor an index cannot take
// as its key (empty, or longer than store.MaxIndexKeyBytes: no real one is)
// is left out of that index; left says why, one reason per index.
func indexAttrs(t time.Time, subject, actor string) (attrs map[string]string, left []string) {
	attrs = map[string]string{store.IndexAuditDay.Attr: t.UTC().Format(DayLayout)}
	for _, k := range []struct {
		ix store.Index
		v  string
	}{{store.IndexAuditSubject, subject}, {store.IndexAuditActor, actor}} {
		if err := store.IndexKeyError(k.ix, k.v); err != nil {
			left = append(left, err.Error())
			continue
		}
		attrs[k.ix.Attr] = k.v
	}
	return attrs, left
}

// rangeKey is the lowest pk of a record at t: records at or after t sort at
// or after it, records before t sort before it.
func rangeKey(t time.Time) string { return fmt.Sprintf("%s%013d", Prefix, t.UnixMilli()) }

// notices says one thing once.
type notices struct {
	fn   func(msg string)
	once sync.Once
}

// SetNotice sets where the log says, once, that it fell back to scanning the
// table because an index is missing (with the fix). Commands pass a writer
// to stderr; nil (the default) says nothing.
func (l *Log) SetNotice(notice func(msg string)) { l.notices = &notices{fn: notice} }

func (l *Log) missing(err error) {
	if l.notices == nil || l.notices.fn == nil {
		return
	}
	l.notices.once.Do(func() {
		l.notices.fn(fmt.Sprintf("note: %v; reading audit records with a scan of the whole table meanwhile", err))
	})
}

// candidates yields the stored items that may match q, newest first (by pk,
// which sorts by time). It reads the index that answers q: by subject for an
// exact subject, by actor for an actor, by UTC day otherwise, only the days
// of the window and within them only its time range, asking for no more
// than q.Limit items when the index answers every filter. A store without
// indexes, or a table that lacks the index, is scanned instead (and the
// scan's items sorted).
func (l *Log) candidates(ctx context.Context, q Query, now time.Time) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		qr, ok := l.store.(store.Querier)
		if ok && !q.Scan {
			err := l.query(ctx, qr, q, now, yield)
			if err == nil || !errors.Is(err, store.ErrIndexMissing) {
				if err != nil {
					yield(nil, err)
				}
				return
			}
			l.missing(err)
		}
		var items []store.Item
		for it, err := range l.store.Scan(ctx, store.ScanQuery{Prefix: Prefix, Stats: q.Stats}) {
			if err != nil {
				yield(nil, err)
				return
			}
			if isLegacyClaim(it.PK()) {
				continue // a claim, not a record
			}
			items = append(items, it)
		}
		slices.SortFunc(items, func(a, b store.Item) int { return strings.Compare(b.PK(), a.PK()) })
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// maxClockSkew is how far ahead of the reader's clock a writer's may run
// for an open-ended listing to find its records in the right day partition.
const maxClockSkew = time.Hour

// errStop ends a query early because the consumer stopped.
var errStop = errors.New("stop")

// query runs q on qr's indexes, yielding items newest first. It returns an
// error wrapping store.ErrIndexMissing before yielding anything when the
// index is missing, so the caller can fall back.
func (l *Log) query(ctx context.Context, qr store.Querier, q Query, now time.Time, yield func(store.Item, error) bool) error {
	since := now.Add(-Retention)
	if q.Since.After(since) {
		since = q.Since
	}
	// Without Until the window is open above: a record stamped by a writer
	// whose clock runs ahead of ours is still listed. The day partitions
	// are read from the day of now + maxClockSkew.
	until, to := now.Add(maxClockSkew), ""
	if !q.Until.IsZero() {
		until = q.Until
		// The last pk before until: every key of a record before until
		// sorts below rangeKey(until).
		to = rangeKey(until.Add(-time.Millisecond)) + "#~"
	}
	if !since.Before(until) {
		return nil
	}
	from := rangeKey(since)
	exactSubject := q.Subject != "" && !strings.HasSuffix(q.Subject, "*")
	exactActor := q.Actor != "" && !strings.HasSuffix(q.Actor, "*")
	run := func(ix store.Index, key string, pushdown bool, yielded *int) error {
		iq := store.IndexQuery{Index: ix, Key: key, From: from, To: to, Descending: true, Stats: q.Stats}
		if pushdown && q.Limit > 0 {
			iq.Limit = q.Limit - *yielded
		}
		for it, err := range qr.Query(ctx, iq) {
			if err != nil {
				return err
			}
			if ix.KeysOnly {
				return fmt.Errorf("audit index %s holds only keys", ix.Name)
			}
			*yielded++
			if !yield(it, nil) {
				return errStop
			}
		}
		return nil
	}
	yielded := 0
	var err error
	switch {
	case exactSubject:
		err = run(store.IndexAuditSubject, q.Subject, q.Action == "" && q.Actor == "" && q.RunID == "" && q.Keep == nil, &yielded)
	case exactActor:
		err = run(store.IndexAuditActor, q.Actor, q.Action == "" && q.Subject == "" && q.RunID == "" && q.Keep == nil, &yielded)
	default:
		err = l.days(ctx, qr, q, now, since, until, from, to, yield)
	}
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// dayRounds is how many day partitions each round of a listing by day
// reads, concurrently: the newest day first (with the day of now when the
// clock-skew hour puts the window's end on the next day), then the rest of
// the newest fortnight, then every remaining day of the window. A listing
// therefore takes at most three round trips of the store (more only where
// a day partition holds over a megabyte of records and DynamoDB pages it),
// whatever the log's shape; a log whose newest records are old costs one
// request per day of the window (at most 92 for the 90 days of retention),
// most of them sent together.
var dayRounds = []int{1, 15}

// days reads the day index from until's day back to since's, newest first,
// in the rounds of [dayRounds]. A round's partitions are read concurrently
// and yielded newest first; the listing stops after the round in which it
// has its Limit records. Each query asks for no more than the records still
// wanted, so a round may examine up to its width times that (only on a log
// whose newest records lie behind empty days, or that fall short of Limit
// in the newest day).
func (l *Log) days(ctx context.Context, qr store.Querier, q Query, now, since, until time.Time, from, to string, yield func(store.Item, error) bool) error {
	pushdown := q.Action == "" && q.Subject == "" && q.Actor == "" && q.RunID == "" && q.Keep == nil
	var days []string
	last := until.Add(-time.Millisecond).UTC().Truncate(24 * time.Hour)
	for day := last; !day.Before(since.UTC().Truncate(24 * time.Hour)); day = day.Add(-24 * time.Hour) {
		days = append(days, day.Format(DayLayout))
	}
	yielded := 0
	for round := 0; len(days) > 0; round++ {
		width := len(days)
		if round < len(dayRounds) {
			width = min(dayRounds[round], width)
		}
		if round == 0 && len(days) > 1 && days[0] > now.UTC().Format(DayLayout) {
			width = 2 // the skew's next day, and today
		}
		batch := days[:width]
		days = days[width:]
		found := make([][]store.Item, len(batch))
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for j, day := range batch {
			iq := store.IndexQuery{Index: store.IndexAuditDay, Key: day, From: from, To: to, Descending: true, Stats: q.Stats}
			if pushdown && q.Limit > 0 {
				iq.Limit = q.Limit - yielded
			}
			wg.Go(func() {
				for it, err := range qr.Query(ctx, iq) {
					if err != nil {
						errs[j] = err
						return
					}
					found[j] = append(found[j], it)
				}
			})
		}
		wg.Wait()
		for j := range batch {
			if errs[j] != nil {
				return errs[j]
			}
			for _, it := range found[j] {
				yielded++
				if !yield(it, nil) {
					return nil
				}
				if pushdown && q.Limit > 0 && yielded >= q.Limit {
					return nil
				}
			}
		}
	}
	return nil
}

// BackfillReport says what [Log.Backfill] found and did.
type BackfillReport struct {
	// Examined counts the audit records read.
	Examined int `json:"examined"`
	// Updated counts the records that lacked index attributes and were (or,
	// in a dry run, would be) rewritten with them.
	Updated int `json:"updated"`
	// Unindexed lists the records left out of an index, and why: a pk
	// longer than an index's sort key may be (store.MaxIndexedPKBytes; out
	// of every index), or a subject or actor an index cannot take as its key
	// (empty or too long; out of that index). Indexed reads miss them there,
	// `audit list --scan` finds them.
	Unindexed []store.Unindexed `json:"unindexed,omitempty"`
}

// backfillWorkers bounds Backfill's concurrent writes.
const backfillWorkers = 8

// Backfill adds the index attributes to records written before the indexes
// existed, so the indexed reads find them. Records are immutable, so each
// rewrite is conditional on the record's time as read: a record collected
// by TTL meanwhile is not resurrected. With dryRun it only counts. The scan
// is paced by rate (nil: unpaced).
func (l *Log) Backfill(ctx context.Context, dryRun bool, rate *store.ScanRate, stats *store.ReadStats) (BackfillReport, error) {
	var (
		rep   BackfillReport
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	work := make(chan store.Item)
	for range backfillWorkers {
		wg.Go(func() {
			for it := range work {
				ms, _ := it.Int(attrTime)
				if err := l.store.Put(ctx, it, store.IfEquals(attrTime, ms)); err != nil && !errors.Is(err, store.ErrConditionFailed) {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("backfill audit record %s: %w", it.PK(), err)
					}
					mu.Unlock()
				}
			}
		})
	}
	var scanErr error
	for it, err := range l.store.Scan(ctx, store.ScanQuery{Prefix: Prefix, Rate: rate, Stats: stats, PageSize: 500}) {
		if err != nil {
			scanErr = fmt.Errorf("backfill audit records: %w", err)
			break
		}
		if isLegacyClaim(it.PK()) {
			continue // a claim is in no index
		}
		rep.Examined++
		ms, ok := it.Int(attrTime)
		if !ok {
			continue // unreadable: audit list reports it, nothing to index it by
		}
		want, left := indexAttrs(time.UnixMilli(ms), it.Str("subject"), it.Str("actor"))
		changed := false
		for k, v := range want {
			if it.Str(k) != v {
				changed = true
			}
		}
		if changed {
			if err := store.IndexedPKError(store.IndexAuditDay, it.PK()); err != nil {
				rep.Unindexed = append(rep.Unindexed, store.Unindexed{PK: it.PK(), Why: err.Error()})
				continue
			}
		}
		for _, why := range left {
			rep.Unindexed = append(rep.Unindexed, store.Unindexed{PK: it.PK(), Why: why})
		}
		if !changed {
			continue
		}
		rep.Updated++
		if dryRun {
			continue
		}
		next := it.Clone()
		for k, v := range want {
			next[k] = v
		}
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		work <- next
	}
	close(work)
	wg.Wait()
	if scanErr != nil {
		return rep, scanErr
	}
	return rep, first
}

// Item returns the stored form of r, index attributes included: what
// [Log.Append] writes. It is for loaders (benchmarks, fixtures) that write
// records in bulk; operator changes go through Append.
func (r Record) Item() store.Item { return r.item() }
