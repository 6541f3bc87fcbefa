package approval

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
)

// The open ones, listed without a scan. A pending request and an open
// break-glass review carry the lists index's attributes (a partition of
// their own, sorted by creation: "<epoch ms>#<id>"), and lose them when the
// request is decided or the review acknowledged (the item is written whole
// again): the partition holds what is open, whatever the table holds. A
// listing reads both partitions at once, then, in one batch read, what it
// shows needs: every listed item again by key (the index is eventually
// consistent on DynamoDB; the item read by key is the one shown), the
// proofs each names and each request's closed marker. Two rounds, whatever
// the table holds; what was decided meanwhile (its item no longer pending)
// is left out, and a proof named only by the item as read by key is read
// in a third. A review that names no proof at all (made before proofs, or
// its proofs dropped from its item by hand) costs a scan of the table's
// proofs, which alone show whether one exists. An item is only a summary: a request the requester's role put
// back into the partition is checked against its proofs and closed marker
// like any (tampered), and one taken out of it is not shown, which
// approves nothing. `request list --all` scans, as before.

// Partitions of the lists index (store.IndexLists) holding the open ones.
const (
	OpenRequests = "request"
	OpenReviews  = "review"
)

// openEntry puts it in the lists index's partition part, sorted by its
// creation.
func openEntry(it store.Item, part string, created time.Time, id string) {
	sort := fmt.Sprintf("%013d#%s", created.UnixMilli(), id)
	if store.SortKeyError(store.IndexLists, sort) != nil {
		return // listed by --all alone
	}
	it[store.IndexLists.Attr], it[store.IndexLists.Sort] = part, sort
}

// querier is a store that answers index queries (every backend but the
// tests' in-memory ones).
type querier interface {
	Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error]
}

// ListOpen lists the pending requests and the open reviews, newest first,
// each checked against its proofs, from the lists index: no scan (see
// above). A store without the index (a table made before it, until
// `koshactl store migrate`) is listed as [Service.List] lists it.
func (s *Service) ListOpen(ctx context.Context) (Listing, error) {
	qr, ok := s.store.(querier)
	if !ok {
		return s.List(ctx)
	}
	parts := []string{OpenRequests, OpenReviews}
	found := make([][]store.Item, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() {
			for it, err := range qr.Query(ctx, store.IndexQuery{Index: store.IndexLists, Key: part, Descending: true}) {
				if err != nil {
					errs[i] = err
					return
				}
				found[i] = append(found[i], it)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, store.ErrIndexMissing) {
			return s.List(ctx)
		}
		return Listing{}, fmt.Errorf("list the open requests and reviews: %w", err)
	}
	return s.check(ctx, found[0], found[1])
}

// OpenPage is how many open requests (or reviews) [Service.ListOpenPages]
// reads and checks at once: a page of the index and the batch read of what
// it names.
const OpenPage = 100

// ListOpenPages lists what [Service.ListOpen] lists of part (OpenRequests
// or OpenReviews), newest first, a page at a time: each [OpenPage] items
// of the index are checked against their proofs (one batch read) and handed
// to each before the next are read, so a list of any length is held a page
// at a time. A store without the index is listed as [Service.List] lists
// it, in one page (requests and reviews). An error of each ends the listing
// and is returned.
func (s *Service) ListOpenPages(ctx context.Context, part string, each func(Listing) error) error {
	qr, ok := s.store.(querier)
	if !ok {
		return s.listAll(ctx, each)
	}
	var page []store.Item
	handed := false
	flush := func() error {
		var l Listing
		var err error
		if part == OpenReviews {
			l, err = s.check(ctx, nil, page)
		} else {
			l, err = s.check(ctx, page, nil)
		}
		if err != nil {
			return err
		}
		page, handed = nil, true
		return each(l)
	}
	for it, err := range qr.Query(ctx, store.IndexQuery{Index: store.IndexLists, Key: part, Descending: true}) {
		if err != nil {
			if errors.Is(err, store.ErrIndexMissing) && !handed && len(page) == 0 {
				return s.listAll(ctx, each)
			}
			return fmt.Errorf("list the open requests and reviews: %w", err)
		}
		page = append(page, it)
		if len(page) == OpenPage {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(page) > 0 || !handed {
		return flush()
	}
	return nil
}

// listAll hands each the whole of [Service.List], as one page.
func (s *Service) listAll(ctx context.Context, each func(Listing) error) error {
	l, err := s.List(ctx)
	if err != nil {
		return err
	}
	return each(l)
}

// check decodes the requests and reviews the lists index listed and checks
// each against its proofs and closed marker (one batch read; see above).
func (s *Service) check(ctx context.Context, reqItems, revItems []store.Item) (Listing, error) {
	_, consistent := s.store.(store.ConsistentQuerier)
	var out Listing
	keys := map[string]bool{}
	var reqs []Request
	var revs []Review
	for _, it := range reqItems {
		r, err := s.decode(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		reqs = append(reqs, r)
		keys[ClosedKey(r.ID)] = true
		for _, pk := range r.Proofs {
			keys[pk] = true
		}
		if !consistent {
			keys[it.PK()] = true
		}
	}
	for _, it := range revItems {
		r, err := ReviewFromItem(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		revs = append(revs, r)
		for _, pk := range r.Proofs {
			keys[pk] = true
		}
		if !consistent {
			keys[it.PK()] = true
		}
	}
	items, err := s.readKeys(ctx, keys)
	if err != nil {
		return Listing{}, err
	}
	if !consistent {
		// The items as read by key: decided meanwhile, left out; changed
		// meanwhile, shown as they are now, their new proofs read too.
		if reqs, revs, err = s.fresh(ctx, reqs, revs, items, &out); err != nil {
			return Listing{}, err
		}
	}
	if slices.ContainsFunc(revs, func(r Review) bool { return len(r.Proofs) == 0 }) {
		// A review naming no proof of who broke its glass was made before
		// proofs, or its item was rewritten without koshactl to hide it
		// (its actor, to acknowledge it herself): only the table's proofs
		// tell which, so they are scanned, in this case alone.
		if err := s.scanProofs(ctx, items); err != nil {
			return Listing{}, fmt.Errorf("read the proofs of the reviews that name none: %w", err)
		}
	}
	for _, r := range reqs {
		_, closed := items[ClosedKey(r.ID)]
		r.verify(items, closed)
		out.Requests = append(out.Requests, r)
	}
	for _, r := range revs {
		r.verify(items)
		out.Reviews = append(out.Reviews, r)
	}
	sort.SliceStable(out.Requests, func(i, j int) bool { return out.Requests[i].CreatedAt.After(out.Requests[j].CreatedAt) })
	sort.SliceStable(out.Reviews, func(i, j int) bool { return out.Reviews[i].CreatedAt.After(out.Reviews[j].CreatedAt) })
	sort.SliceStable(out.Unreadable, func(i, j int) bool { return out.Unreadable[i].PK < out.Unreadable[j].PK })
	return out, nil
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
// items as read by key (items): gone or no longer open, left out; changed,
// decoded again, and the proofs they name that were not read are read.
func (s *Service) fresh(ctx context.Context, reqs []Request, revs []Review, items map[string]store.Item, out *Listing) ([]Request, []Review, error) {
	more := map[string]bool{}
	var keepReqs []Request
	for _, r := range reqs {
		it, ok := items[RequestPrefix+r.ID]
		if !ok || it.Str(store.IndexLists.Attr) != OpenRequests {
			continue
		}
		fr, err := s.decode(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		for _, pk := range fr.Proofs {
			if _, read := items[pk]; !read && !slices.Contains(r.Proofs, pk) {
				more[pk] = true
			}
		}
		keepReqs = append(keepReqs, fr)
	}
	var keepRevs []Review
	for _, r := range revs {
		it, ok := items[ReviewPrefix+r.ID]
		if !ok || it.Str(store.IndexLists.Attr) != OpenReviews {
			continue
		}
		fr, err := ReviewFromItem(it)
		if err != nil {
			out.Unreadable = append(out.Unreadable, store.Problem{PK: it.PK(), Problem: err.Error()})
			continue
		}
		for _, pk := range fr.Proofs {
			if _, read := items[pk]; !read && !slices.Contains(r.Proofs, pk) {
				more[pk] = true
			}
		}
		keepRevs = append(keepRevs, fr)
	}
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
