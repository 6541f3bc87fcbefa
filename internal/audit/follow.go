package audit

import (
	"context"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/store"
)

// FollowLookback is how far back each [Follower.Poll] after the first reads
// again: a record can become visible after a later one (writers' clocks
// differ by a little, a slow write lands late), and re-reading the last
// minute catches it. Records already returned are never returned twice.
const FollowLookback = time.Minute

// Follower returns new audit records as they are written, for `audit list
// --follow`. It is not safe for concurrent use.
type Follower struct {
	log  *Log
	q    Query
	mark time.Time            // newest record time returned (or the first poll's time)
	seen map[string]time.Time // ids returned within the lookback, with their times
	// reported holds the problems of unreadable records returned already.
	reported map[store.Problem]bool
	first    bool
}

// Follow returns a Follower of the records matching q. Its first Poll
// returns what List(q) returns (the newest q.Limit), later polls every
// matching record not returned before; Until must be zero.
func (l *Log) Follow(q Query) *Follower {
	return &Follower{log: l, q: q, seen: map[string]time.Time{}, reported: map[store.Problem]bool{}, first: true}
}

// Poll returns the matching records not returned yet, oldest first, and,
// as [Log.List] does, every attribute of a matching record it could not
// read, each problem once (a record that cannot be dated is met by every
// poll, and reported by the first).
func (f *Follower) Poll(ctx context.Context) (Listing, error) {
	q := f.q
	if !f.first {
		q.Limit = 0
		if since := f.mark.Add(-FollowLookback); since.After(q.Since) {
			q.Since = since
		}
	} else {
		f.mark = f.log.clock.Now()
	}
	l, err := f.log.List(ctx, q)
	if err != nil {
		return Listing{}, err
	}
	f.first = false
	var out Listing
	for _, p := range l.Unreadable {
		if !f.reported[p] {
			f.reported[p] = true
			out.Unreadable = append(out.Unreadable, p)
		}
	}
	for _, r := range l.Records {
		if _, dup := f.seen[r.ID]; dup {
			continue
		}
		f.seen[r.ID] = r.Time
		if r.Time.After(f.mark) {
			f.mark = r.Time
		}
		out.Records = append(out.Records, r)
	}
	for id, t := range f.seen {
		if t.Before(f.mark.Add(-FollowLookback)) {
			delete(f.seen, id)
		}
	}
	slices.Reverse(out.Records) // List is newest first
	return out, nil
}
