package audit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
)

// DayLayout is how a record's UTC day is written in the day index's key.
const DayLayout = "2006-01-02"

// ListShards is how many partitions of the lists index hold audit records
// ("audit#0", ...; docs/contracts/store.md): a listing by time reads each
// once, in one round trip, and the writes of a busy log spread over that
// many index partitions. One: the default listing is then one query (and
// the table's policy beside it, two requests), and a second partition would
// not raise the table's write ceiling, which the day index's partition of
// today already sets at the same 1,000 records a second. Changing it moves
// every record (store migrate's backfill rewrites them).
const ListShards = 1

// listShard is the lists index partition of the record with id: chosen by
// the id's last byte, so the records of one change spread over the shards
// and a rewrite (store migrate) puts a record where its writer did.
func listShard(id string) string {
	n := 0
	if id != "" {
		n = int(id[len(id)-1]) % ListShards
	}
	return Prefix + strconv.Itoa(n)
}

// timeKey is a record's time-ordered key, "<epoch ms, 13 digits>#<id>":
// the lists index's sort key, and the order every listing yields records
// in (newest first, then by id), whatever the record's pk prefix.
func timeKey(ms int64, id string) string { return fmt.Sprintf("%013d#%s", ms, id) }

// pkTimeKey is the timeKey of a record's pk ("audit#<ms>#<id>", or under
// the data plane's or requests' prefix), for records read from an index
// sorted by pk.
func pkTimeKey(pk string) string {
	for _, p := range []string{DataPlanePrefix, RequestPrefix, Prefix} {
		if rest, ok := strings.CutPrefix(pk, p); ok {
			return rest
		}
	}
	return pk
}

// indexAttrs are the attributes that place the record pk (of id, at t) in
// the audit indexes (docs/contracts/audit-record.md). What an index cannot
// take as its key is left out of that index, and left says why, one reason
// per index: a subject or actor empty, or longer than
// store.MaxIndexKeyBytes; a pk longer than the indexes sorted by pk take
// (one reason for the three); an id that makes the lists index's sort key
// too long. No record koshactl writes is any of these.
func indexAttrs(t time.Time, pk, id, subject, actor string) (attrs map[string]string, left []string) {
	attrs = map[string]string{}
	if sort := timeKey(t.UnixMilli(), id); store.SortKeyError(store.IndexLists, sort) != nil {
		left = append(left, store.SortKeyError(store.IndexLists, sort).Error())
	} else {
		attrs[store.IndexLists.Attr], attrs[store.IndexLists.Sort] = listShard(id), sort
	}
	if err := store.IndexedPKError(store.IndexAuditDay, pk); err != nil {
		return attrs, append(left, err.Error())
	}
	attrs[store.IndexAuditDay.Attr] = t.UTC().Format(DayLayout)
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

// notices says one thing once.
type notices struct {
	fn   func(msg string)
	once sync.Once
}

// SetNotice sets where the log says, once, that it read a slower way
// because an index is missing (with the fix): the day index or a scan of
// the table. Commands pass a writer to stderr; nil (the default) says
// nothing.
func (l *Log) SetNotice(notice func(msg string)) { l.notices = &notices{fn: notice} }

func (l *Log) missing(err error, meanwhile string) {
	if l.notices == nil || l.notices.fn == nil {
		return
	}
	l.notices.once.Do(func() {
		l.notices.fn(fmt.Sprintf("note: %v; reading audit records %s meanwhile", err, meanwhile))
	})
}

// candidates yields the stored items that may match q, newest first by
// time (then by id), as the store returns them. It reads the index that
// answers q: by subject for an exact subject, by actor for an actor, the
// lists index (by time) otherwise, only the window's range, asking for no
// more than q.Limit items when the index answers every filter. A table
// without the lists index is read by day; a store without indexes, or a
// table that lacks the index, is scanned instead (and the scan's items
// sorted, so a scan holds them all).
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
			l.missing(err, "with a scan of the whole table")
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
		// Newest first by the records' time (an item written by hand may
		// carry a time its pk does not say), then id.
		scanKey := func(it store.Item) string {
			if ms, ok := it[attrTime].(int64); ok {
				return timeKey(ms, it.PK()[strings.LastIndexByte(it.PK(), '#')+1:])
			}
			return pkTimeKey(it.PK())
		}
		slices.SortFunc(items, func(a, b store.Item) int { return strings.Compare(scanKey(b), scanKey(a)) })
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

// window is a listing's time range: records at or after since, before
// until (zero: open above).
type window struct{ since, until time.Time }

// sortRange bounds the lists index's sort key to the window.
func (w window) sortRange() (from, to string) {
	from = timeKey(w.since.UnixMilli(), "")
	if !w.until.IsZero() {
		to = timeKey(w.until.Add(-time.Millisecond).UnixMilli(), "~")
	}
	return from, to
}

// pkRanges bounds the pks of the window's records in an index sorted by
// pk: one range per record prefix (the operators' audit#, the data plane's
// audit#dp#, requests' audit#rq#), which sort apart, never with each other
// by time. Claims (audit#claim#) are in none.
func (w window) pkRanges() [][2]string {
	var out [][2]string
	for _, p := range []string{Prefix, DataPlanePrefix, RequestPrefix} {
		from, to := p+fmt.Sprintf("%013d", w.since.UnixMilli()), p+":" // ':' sorts after every digit
		if !w.until.IsZero() {
			// The last pk before until: every key of a record before until
			// sorts below it.
			to = p + fmt.Sprintf("%013d#~", w.until.Add(-time.Millisecond).UnixMilli())
		}
		out = append(out, [2]string{from, to})
	}
	return out
}

// query runs q on qr's indexes, yielding items newest first. It returns an
// error wrapping store.ErrIndexMissing before yielding anything when the
// index is missing, so the caller can fall back.
func (l *Log) query(ctx context.Context, qr store.Querier, q Query, now time.Time, yield func(store.Item, error) bool) error {
	since := now.Add(-Retention)
	if q.Since.After(since) {
		since = q.Since
	}
	// Without Until the window is open above: a record stamped by a writer
	// whose clock runs ahead of ours is still listed.
	w := window{since: since, until: q.Until}
	if !w.until.IsZero() && !since.Before(w.until) {
		return nil
	}
	exactSubject := q.Subject != "" && !strings.HasSuffix(q.Subject, "*")
	exactActor := q.Actor != "" && !strings.HasSuffix(q.Actor, "*")
	limit := 0
	pushdown := func(otherFilters ...string) {
		for _, f := range otherFilters {
			if f != "" {
				return
			}
		}
		if q.RunID == "" && q.Keep == nil {
			limit = q.Limit
		}
	}
	byPK := func(ix store.Index, key string) []store.IndexQuery {
		var qs []store.IndexQuery
		for _, r := range w.pkRanges() {
			qs = append(qs, store.IndexQuery{Index: ix, Key: key, From: r[0], To: r[1], Descending: true, Limit: limit, Stats: q.Stats})
		}
		return qs
	}
	var err error
	switch {
	case exactSubject:
		pushdown(q.Action, q.Actor)
		err = newestFirst(ctx, qr, byPK(store.IndexAuditSubject, q.Subject), yield)
	case exactActor:
		pushdown(q.Action, q.Subject)
		err = newestFirst(ctx, qr, byPK(store.IndexAuditActor, q.Actor), yield)
	default:
		pushdown(q.Action, q.Subject, q.Actor)
		from, to := w.sortRange()
		var qs []store.IndexQuery
		for shard := range ListShards {
			qs = append(qs, store.IndexQuery{Index: store.IndexLists, Key: Prefix + strconv.Itoa(shard), From: from, To: to,
				Descending: true, Limit: limit, Stats: q.Stats})
		}
		err = newestFirst(ctx, qr, qs, yield)
		if errors.Is(err, store.ErrIndexMissing) {
			l.missing(err, "by day")
			err = l.days(ctx, qr, q, now, w, limit, yield)
		}
	}
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// newestFirst runs qs and yields their items merged newest first by time
// (the lists index's sort key, or the time in an item's pk), as
// [store.NewestFirst] merges them. It returns what the first item of any
// query was, when that is an error (store.ErrIndexMissing: nothing
// yielded), errStop when the consumer stopped.
func newestFirst(ctx context.Context, qr store.Querier, qs []store.IndexQuery, yield func(store.Item, error) bool) error {
	key := func(it store.Item) string {
		if k := it.Str(store.IndexLists.Sort); k != "" && qs[0].Index == store.IndexLists {
			return k
		}
		return pkTimeKey(it.PK())
	}
	for it, err := range store.NewestFirst(ctx, qr, qs, key) {
		if err != nil {
			return err
		}
		if !yield(it, nil) {
			return errStop
		}
	}
	return nil
}

// dayRounds is how many day partitions each round of a listing by day
// reads, concurrently: the newest day first (with the day of now when the
// clock-skew hour puts the window's end on the next day), then the rest of
// the newest fortnight, then every remaining day of the window. A listing
// by day therefore takes at most three round trips of the store; it is
// what a table without the lists index (before `store migrate`) is read by.
var dayRounds = []int{1, 15}

// days reads the day index from until's day back to since's, newest first,
// in the rounds of [dayRounds], three pk ranges a day (one per record
// prefix). A round's queries run concurrently, merged newest first; the
// listing stops after the round in which it has its limit records. Each
// query asks for no more than the records still wanted.
func (l *Log) days(ctx context.Context, qr store.Querier, q Query, now time.Time, w window, limit int, yield func(store.Item, error) bool) error {
	// Without Until the day partitions are read from the day of now +
	// maxClockSkew.
	until := w.until
	if until.IsZero() {
		until = now.Add(maxClockSkew)
	}
	var days []string
	last := until.Add(-time.Millisecond).UTC().Truncate(24 * time.Hour)
	for day := last; !day.Before(w.since.UTC().Truncate(24 * time.Hour)); day = day.Add(-24 * time.Hour) {
		days = append(days, day.Format(DayLayout))
	}
	yielded := 0
	counting := func(it store.Item, err error) bool {
		if err == nil {
			yielded++
		}
		return yield(it, err)
	}
	for round := 0; len(days) > 0; round++ {
		width := len(days)
		if round < len(dayRounds) {
			width = min(dayRounds[round], width)
		}
		if round == 0 && len(days) > 1 && days[0] > now.UTC().Format(DayLayout) {
			width = 2 // the skew's next day, and today
		}
		var qs []store.IndexQuery
		for _, day := range days[:width] {
			for _, r := range w.pkRanges() {
				iq := store.IndexQuery{Index: store.IndexAuditDay, Key: day, From: r[0], To: r[1], Descending: true, Stats: q.Stats}
				if limit > 0 {
					iq.Limit = limit - yielded
				}
				qs = append(qs, iq)
			}
		}
		days = days[width:]
		if err := newestFirst(ctx, qr, qs, counting); err != nil {
			return err
		}
		if limit > 0 && yielded >= limit {
			return nil
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
		id := it.PK()[strings.LastIndexByte(it.PK(), '#')+1:]
		want, left := indexAttrs(time.UnixMilli(ms), it.PK(), id, it.Str("subject"), it.Str("actor"))
		changed := false
		for k, v := range want {
			if it.Str(k) != v {
				changed = true
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
