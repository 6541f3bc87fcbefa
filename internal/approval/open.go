package approval

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Listed without a scan. A request and a break-glass review carry the
// lists index's attributes (a partition, sorted by creation: "<epoch
// ms>#<id>"): the kind's open partition while it is open (a pending
// request, an open review), its closed one once it is decided or
// acknowledged (the item is written whole again, in the other partition).
// The open partition holds what is open, whatever the table holds; the two
// together hold every request (or review), which `request list --all`
// reads at once (one round) and merges newest first ([store.NewestFirst]).
// A listing reads the index a page ([OpenPage]) at a time and, in one
// batch read, what the page shows needs: every listed item again by key
// (the index is eventually consistent on DynamoDB; the item read by key is
// the one shown), the proofs each names and each request's closed marker.
// Two rounds a page, whatever the table holds; what was decided meanwhile
// (its item no longer pending) is left out of the open list, and a proof
// named only by the item as read by key is read in a third. A review that
// names no proof at all (made before proofs, or its proofs dropped from its
// item by hand) costs a scan of the table's proofs, which alone show
// whether one exists: once a listing, whose proofs of breaking a glass it
// keeps for the pages after. An item is only a summary: a request the
// requester's role put back into the open partition is checked against its
// proofs and closed marker like any (tampered), and one taken out of the
// index is not shown, which approves nothing (the audit log keeps its
// records). Items written before the closed partitions existed are put in
// them by `koshactl store migrate` ([Service.Backfill]).

// Partitions of the lists index (store.IndexLists) holding requests and
// reviews.
const (
	OpenRequests   = "request"
	OpenReviews    = "review"
	ClosedRequests = "request#closed"
	ClosedReviews  = "review#closed"
)

// listPart is the lists index partition of a request or review item (pk)
// in status: open or closed; "" for another item.
func listPart(pk, status string) string {
	switch {
	case strings.HasPrefix(pk, RequestPrefix) && status == StatusPending:
		return OpenRequests
	case strings.HasPrefix(pk, RequestPrefix):
		return ClosedRequests
	case strings.HasPrefix(pk, ReviewPrefix) && status == ReviewOpen:
		return OpenReviews
	case strings.HasPrefix(pk, ReviewPrefix):
		return ClosedReviews
	}
	return ""
}

// listEntry puts it, a request or review item (its pk and status set), in
// the lists index's partition its status says, sorted by its creation. An
// id too long for the index's sort key leaves it out (listed by a scan
// alone; no id koshactl makes is).
func listEntry(it store.Item, created time.Time, id string) {
	sort := Cursor(created, id)
	if store.SortKeyError(store.IndexLists, sort) != nil {
		return
	}
	it[store.IndexLists.Attr], it[store.IndexLists.Sort] = listPart(it.PK(), it.Str(attrStatus)), sort
}

// Cursor is the place in the lists index koshactl gives the request or
// review id created then: its sort key, "<epoch ms, 13 digits>#<id>". A
// listing resumed [ListQuery.Before] a place lists what the index holds
// after it. A listing hands out the place where the index listed its last
// item ([Request.Place]), never this of the item's created_at, which the
// requester's role may write: a forged creation then moves no page.
func Cursor(created time.Time, id string) string {
	return fmt.Sprintf("%013d#%s", created.UnixMilli(), id)
}

// ParseCursor checks that c is a [Cursor] (as a listing handed it out):
// a usage error naming the problem otherwise.
func ParseCursor(c string) error {
	ms, id, ok := strings.Cut(c, "#")
	if _, err := strconv.ParseUint(ms, 10, 64); !ok || err != nil || len(ms) != 13 || id == "" || !utf8.ValidString(c) || store.SortKeyError(store.IndexLists, c) != nil {
		return exitcode.Errorf(exitcode.Usage, "cursor %s is not one a listing returned (<13-digit epoch ms>#<id>): pass the next_cursor of the answer before, or none for the newest",
			textsafe.Quote(textsafe.Truncate(c, 60)))
	}
	return nil
}

// querier is a store that answers index queries (every backend but the
// tests' in-memory ones).
type querier interface {
	Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error]
}

// OpenPage is how many requests (or reviews) [Service.ListPages] reads and
// checks at once: a page of the index and the batch read of what it names.
const OpenPage = 100

// ListQuery says what [Service.ListPages] lists.
type ListQuery struct {
	// Reviews lists the break-glass reviews; otherwise the change requests.
	Reviews bool
	// All lists the closed ones too (decided and expired requests,
	// acknowledged reviews); otherwise the open ones alone.
	All bool
	// Before, when set (a [Cursor] a listing handed out, checked by
	// [ParseCursor]), lists only what is older: where a listing that
	// stopped there resumes.
	Before string
}

// parts are the lists index partitions q reads.
func (q ListQuery) parts() []string {
	open, closed := OpenRequests, ClosedRequests
	if q.Reviews {
		open, closed = OpenReviews, ClosedReviews
	}
	if q.All {
		return []string{open, closed}
	}
	return []string{open}
}

// ListPages lists what q asks for, newest first, a page at a time: each
// [OpenPage] items of the lists index (its open partition, and with
// q.All its closed one, read at once and merged) are checked against
// their proofs (one batch read) and handed to each before the next are
// read, so a list of any length is held a page at a time; a page's More
// says another follows (a reader that stops after the first, as the
// dashboard's requests pane does, says there are more). A store without
// the index (or a table without it) is listed as [Service.List] lists it,
// in one page (requests and reviews, open and closed: the caller keeps
// what it asked for). An error of each ends the listing and is returned.
func (s *Service) ListPages(ctx context.Context, q ListQuery, each func(Listing) error) error {
	if q.Before != "" {
		if err := ParseCursor(q.Before); err != nil {
			return err
		}
	}
	qr, ok := s.store.(querier)
	if !ok {
		return s.listAll(ctx, q, each)
	}
	var qs []store.IndexQuery
	for _, part := range q.parts() {
		qs = append(qs, store.IndexQuery{Index: store.IndexLists, Key: part, To: q.Before, Descending: true})
	}
	var page []store.Item
	handed := false
	glass := &glassScan{}
	flush := func(more bool) error {
		var l Listing
		var err error
		if q.Reviews {
			l, err = s.check(ctx, nil, page, q.All, glass)
		} else {
			l, err = s.check(ctx, page, nil, q.All, glass)
		}
		if err != nil {
			return err
		}
		l.More = more
		page, handed = nil, true
		return each(l)
	}
	// The items met at the last sort key: one item is met in both
	// partitions when it is decided while they are read (the same key and
	// pk, one after the other); another item at the same key (one whose
	// item was written around koshactl) is listed too, and flagged.
	last, atLast := "", map[string]bool{}
	for it, err := range store.NewestFirst(ctx, qr, qs, func(it store.Item) string { return it.Str(store.IndexLists.Sort) }) {
		if err != nil {
			if errors.Is(err, store.ErrIndexMissing) && !handed && len(page) == 0 {
				return s.listAll(ctx, q, each)
			}
			return fmt.Errorf("list the requests and reviews: %w", err)
		}
		key := it.Str(store.IndexLists.Sort)
		if key == q.Before {
			continue // the bound itself (inclusive in a query)
		}
		if key != last {
			last = key
			clear(atLast)
		}
		if atLast[it.PK()] {
			continue
		}
		atLast[it.PK()] = true
		if len(page) == OpenPage {
			// A full page is handed once an item after it shows the
			// listing goes on (almost always in the index page read
			// already: no read more).
			if err := flush(true); err != nil {
				return err
			}
		}
		page = append(page, it)
	}
	if len(page) > 0 || !handed {
		return flush(false)
	}
	return nil
}

// listAll hands each the whole of [Service.List] (what is older than
// q.Before), as one page.
func (s *Service) listAll(ctx context.Context, q ListQuery, each func(Listing) error) error {
	l, err := s.List(ctx)
	if err != nil {
		return err
	}
	// Without the index, a place is the one its creation gives it, the
	// order List sorts by.
	for i := range l.Requests {
		l.Requests[i].Place = Cursor(l.Requests[i].CreatedAt, l.Requests[i].ID)
	}
	for i := range l.Reviews {
		l.Reviews[i].Place = Cursor(l.Reviews[i].CreatedAt, l.Reviews[i].ID)
	}
	if q.Before != "" {
		l.Requests = slices.DeleteFunc(l.Requests, func(r Request) bool { return r.Place >= q.Before })
		l.Reviews = slices.DeleteFunc(l.Reviews, func(r Review) bool { return r.Place >= q.Before })
	}
	return each(l)
}

// glassScan is what a listing keeps of its one scan of the table's proofs
// (see above): the proofs of breaking a review's glass, one a break-glass
// review, held for the pages after the first that needed them.
type glassScan struct {
	done   bool
	proofs map[string]store.Item
}

// into puts the table's proofs of breaking a glass into items, scanning
// them the first time.
func (g *glassScan) into(ctx context.Context, s *Service, items map[string]store.Item) error {
	if !g.done {
		all := map[string]store.Item{}
		if err := s.scanProofs(ctx, all); err != nil {
			return err
		}
		g.proofs = map[string]store.Item{}
		for pk, it := range all {
			if p, err := proof.FromItem(it); err == nil && p.Kind == proof.KindReview && p.Verb == proof.Glass {
				g.proofs[pk] = it
			}
		}
		g.done = true
	}
	maps.Copy(items, g.proofs)
	return nil
}

// check decodes the requests and reviews the lists index listed and checks
// each against its proofs and closed marker (one batch read; see above).
// all keeps the closed ones (read again by key, decided meanwhile); glass
// is the listing's scan of proofs.
func (s *Service) check(ctx context.Context, reqItems, revItems []store.Item, all bool, glass *glassScan) (Listing, error) {
	_, consistent := s.store.(store.ConsistentQuerier)
	var out Listing
	keys := map[string]bool{}
	// listed is each item as the index placed it (as read by key, below,
	// where the index is not consistent).
	listed := map[string]store.Item{}
	// places are where the index listed each item (its sort key as
	// read): the order the page is shown in and a resumed listing's
	// cursor, whatever the item claims.
	places := map[string]string{}
	for _, it := range slices.Concat(reqItems, revItems) {
		listed[it.PK()] = it
		places[it.PK()] = it.Str(store.IndexLists.Sort)
	}
	// need notes the keys an item (pk) needs read: the proofs it names,
	// and itself where the index is not consistent.
	need := func(pk string, proofs []string) {
		for _, p := range proofs {
			keys[p] = true
		}
		if !consistent {
			keys[pk] = true
		}
	}
	reqs := decodeEach(reqItems, s.decode, &out)
	for _, r := range reqs {
		keys[ClosedKey(r.ID)] = true
		need(RequestPrefix+r.ID, r.Proofs)
	}
	revs := decodeEach(revItems, ReviewFromItem, &out)
	for _, r := range revs {
		need(ReviewPrefix+r.ID, r.Proofs)
	}
	items, err := s.readKeys(ctx, keys)
	if err != nil {
		return Listing{}, err
	}
	if !consistent {
		// The items as read by key: decided meanwhile, left out (unless
		// all); changed meanwhile, shown as they are now, their new
		// proofs read too.
		if reqs, revs, err = s.fresh(ctx, reqs, revs, items, all, &out); err != nil {
			return Listing{}, err
		}
		for pk := range listed {
			if it, ok := items[pk]; ok {
				listed[pk] = it
			}
		}
	}
	if slices.ContainsFunc(revs, func(r Review) bool { return len(r.Proofs) == 0 }) {
		// A review naming no proof of who broke its glass was made before
		// proofs, or its item was rewritten without koshactl to hide it
		// (its actor, to acknowledge it herself): only the table's proofs
		// tell which, so they are scanned, in this case alone, once a
		// listing.
		if err := glass.into(ctx, s, items); err != nil {
			return Listing{}, fmt.Errorf("read the proofs of the reviews that name none: %w", err)
		}
	}
	for _, r := range reqs {
		r.Place = places[RequestPrefix+r.ID]
		_, closed := items[ClosedKey(r.ID)]
		r.verify(items, closed)
		if r.Verification == (Verification{}) {
			if why := misplaced(listed[RequestPrefix+r.ID], r.Status, r.CreatedAt, r.ID); why != "" {
				r.Verification = verification(tampered(r.ID, why))
			}
		}
		out.Requests = append(out.Requests, r)
	}
	for _, r := range revs {
		r.Place = places[ReviewPrefix+r.ID]
		r.verify(items)
		if r.Verification == (Verification{}) {
			if why := misplaced(listed[ReviewPrefix+r.ID], r.Status, r.CreatedAt, r.ID); why != "" {
				r.Verification = verification(fmt.Errorf("%w: review %s %s: its item was written without koshactl", ErrTampered, r.ID, why))
			}
		}
		out.Reviews = append(out.Reviews, r)
	}
	// In the index's order (newest first for what koshactl wrote), so the
	// last item shown is the last place read.
	sort.SliceStable(out.Requests, func(i, j int) bool { return out.Requests[i].Place > out.Requests[j].Place })
	sort.SliceStable(out.Reviews, func(i, j int) bool { return out.Reviews[i].Place > out.Reviews[j].Place })
	sort.SliceStable(out.Unreadable, func(i, j int) bool { return out.Unreadable[i].PK < out.Unreadable[j].PK })
	return out, nil
}

// misplaced says how it, a request's or review's item as the lists index
// listed it, is out of the place its status (as its proofs showed it) and
// creation give it: in the other partition (a pending request among the
// closed ones, hidden from the open list), or at another sort key (listed
// where another request is, or out of its order, which a cursor resumes
// by); "" when it is in place. Every koshactl write puts it there
// ([listEntry]), so only a write around koshactl misplaces it.
func misplaced(it store.Item, status string, created time.Time, id string) string {
	part, key := it.Str(store.IndexLists.Attr), it.Str(store.IndexLists.Sort)
	if want := listPart(it.PK(), status); part != want {
		return fmt.Sprintf("is %s, and its item is listed in the lists index partition %s, not %s", textsafe.Line(status), textsafe.Quote(part), want)
	}
	if want := Cursor(created, id); key != want {
		return fmt.Sprintf("is listed at %s, not where its creation puts it (%s)", textsafe.Quote(textsafe.Truncate(key, 60)), textsafe.Quote(want))
	}
	return ""
}

// readKeys reads keys in one batch read (none: no read).
func (s *Service) readKeys(ctx context.Context, keys map[string]bool) (map[string]store.Item, error) {
	if len(keys) == 0 {
		return map[string]store.Item{}, nil
	}
	ks := make([]string, 0, len(keys))
	for k := range keys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	items, err := store.GetMany(ctx, s.store, ks)
	if err != nil {
		return nil, fmt.Errorf("read the open requests' and reviews' proofs: %w", err)
	}
	return items, nil
}

// fresh replaces the requests and reviews the index listed with their
// items as read by key (items): gone, or no longer open unless all, left
// out; changed, decoded again, and the proofs they name that were not read
// are read.
func (s *Service) fresh(ctx context.Context, reqs []Request, revs []Review, items map[string]store.Item, all bool, out *Listing) ([]Request, []Review, error) {
	more := map[string]bool{}
	keepReqs := reread(reqs, func(r Request) (string, []string) { return RequestPrefix + r.ID, r.Proofs }, OpenRequests, s.decode, items, all, more, out)
	keepRevs := reread(revs, func(r Review) (string, []string) { return ReviewPrefix + r.ID, r.Proofs }, OpenReviews, ReviewFromItem, items, all, more, out)
	if len(more) > 0 {
		extra, err := s.readKeys(ctx, more)
		if err != nil {
			return nil, nil, err
		}
		for k, it := range extra {
			items[k] = it
		}
	}
	return keepReqs, keepRevs, nil
}

// reread is each of listed (its key and the proofs it named, as keyOf
// says) as read by key in items, decoded by dec: gone, or out of the open
// partition unless all, left out; unreadable, put in out; the proofs it
// names now that were neither read nor named before, put in more.
func reread[T any](listed []T, keyOf func(T) (string, []string), open string, dec func(store.Item) (T, error), items map[string]store.Item, all bool,
	more map[string]bool, out *Listing) []T {
	var keep []T
	for _, r := range listed {
		pk, named := keyOf(r)
		it, ok := items[pk]
		if !ok || !all && it.Str(store.IndexLists.Attr) != open {
			continue
		}
		fr, err := dec(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		_, proofs := keyOf(fr)
		for _, p := range proofs {
			if _, read := items[p]; !read && !slices.Contains(named, p) {
				more[p] = true
			}
		}
		keep = append(keep, fr)
	}
	return keep
}

// decodeEach decodes items with dec; those it cannot are put in out's
// Unreadable.
func decodeEach[T any](items []store.Item, dec func(store.Item) (T, error), out *Listing) []T {
	var ok []T
	for _, it := range items {
		v, err := dec(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		ok = append(ok, v)
	}
	return ok
}

// BackfillReport says what [Service.Backfill] found and did.
type BackfillReport struct {
	// Examined counts the request and review items read.
	Examined int `json:"examined"`
	// Updated counts the items not in the lists index partition their
	// status says, and (or, in a dry run, would be) rewritten into it.
	Updated int `json:"updated"`
	// Skipped counts the items left as they are: no creation time or
	// write id to place them by and make the rewrite conditional on
	// (unreadable: request list --all reports them when the index lists
	// them, show reads them by key).
	Skipped int `json:"skipped"`
	// Unindexed lists the items left out of the index, and why: an id too
	// long for its sort key.
	Unindexed []store.Unindexed `json:"unindexed,omitempty"`
}

// Backfill puts the requests and reviews written before the closed
// partitions existed (decided or acknowledged ones, out of the index
// then) into the lists index partition their status says, so `request
// list --all` finds them without a scan. The status read is a summary
// the requester's role may have written: the backfill never takes an item
// out of the open partition (it may put one back there), and a listing
// checks the status against the proofs wherever the item is. Each rewrite is the item as read
// with the index attributes, conditional on its write id: one changed
// meanwhile is left to its writer, who wrote it in its partition. With
// dryRun it only counts. The scans are paced by rate (nil: unpaced).
func (s *Service) Backfill(ctx context.Context, dryRun bool, rate *store.ScanRate, stats *store.ReadStats) (BackfillReport, error) {
	var rep BackfillReport
	for _, prefix := range []string{RequestPrefix, ReviewPrefix} {
		for it, err := range s.store.Scan(ctx, store.ScanQuery{Prefix: prefix, Rate: rate, Stats: stats, PageSize: 500}) {
			if err != nil {
				return rep, fmt.Errorf("backfill %sitems: %w", prefix, err)
			}
			rep.Examined++
			ms, ok := it.Int(attrCreatedAt)
			id := strings.TrimPrefix(strings.TrimPrefix(it.PK(), RequestPrefix), ReviewPrefix)
			wid, hasWID := it[store.WriteIDAttr]
			if !ok || !hasWID {
				rep.Skipped++
				continue
			}
			if err := store.SortKeyError(store.IndexLists, Cursor(time.UnixMilli(ms), id)); err != nil {
				rep.Unindexed = append(rep.Unindexed, store.Unindexed{PK: it.PK(), Why: err.Error()})
				continue
			}
			if part := it.Str(store.IndexLists.Attr); part == OpenRequests || part == OpenReviews {
				// Never taken out of the open list: its status may have
				// been written around koshactl (a listing flags an item
				// out of its place).
				continue
			}
			next := it.Clone()
			listEntry(next, time.UnixMilli(ms), id)
			if next.Str(store.IndexLists.Attr) == it.Str(store.IndexLists.Attr) && next.Str(store.IndexLists.Sort) == it.Str(store.IndexLists.Sort) {
				continue
			}
			rep.Updated++
			if dryRun {
				continue
			}
			if err := s.store.Put(ctx, next, store.IfEquals(store.WriteIDAttr, wid)); err != nil && !errors.Is(err, store.ErrConditionFailed) {
				return rep, fmt.Errorf("backfill %s: %w", it.PK(), err)
			}
		}
	}
	return rep, nil
}
