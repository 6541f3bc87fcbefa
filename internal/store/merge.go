package store

import (
	"context"
	"iter"
	"sync"
)

// NewestFirst runs qs, each yielding its items in descending order of key
// (Descending queries of one index, key its sort key or what sorts like
// it), and yields their items merged in that order: the newest first when
// key is a time. The queries run concurrently, so their first requests go
// out together (one round trip); each holds at most the page its store
// read returned, and one item more, while the merge waits on the others.
// The first error of any query is yielded and ends the merge (an
// [ErrIndexMissing] before any item: nothing was yielded); a consumer that
// stops ends the queries. It is how a list of a few fixed partitions of an
// index (the audit log's shards, a kind's open and closed ones) is read a
// page at a time.
func NewestFirst(ctx context.Context, qr Querier, qs []IndexQuery, key func(Item) string) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		type next struct {
			it  Item
			err error
		}
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		runs := make([]chan next, len(qs))
		for i, iq := range qs {
			runs[i] = make(chan next)
			wg.Go(func() {
				defer close(runs[i])
				for it, err := range qr.Query(ctx, iq) {
					select {
					case runs[i] <- next{it, err}:
					case <-ctx.Done():
						return
					}
					if err != nil {
						return
					}
				}
			})
		}
		heads := make([]*next, len(runs))
		pull := func(i int) error {
			n, ok := <-runs[i]
			heads[i] = nil
			if !ok {
				return nil
			}
			if n.err != nil {
				return n.err
			}
			heads[i] = &n
			return nil
		}
		for i := range runs {
			if err := pull(i); err != nil {
				yield(nil, err)
				return
			}
		}
		for {
			best := -1
			for i, h := range heads {
				if h != nil && (best < 0 || key(h.it) > key(heads[best].it)) {
					best = i
				}
			}
			if best < 0 {
				return
			}
			if !yield(heads[best].it, nil) {
				return
			}
			if err := pull(best); err != nil {
				yield(nil, err)
				return
			}
		}
	}
}
