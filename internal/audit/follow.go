package audit

import (
	"context"
	"slices"
	"time"
)

// FollowLookback is how far back each [Follower.Poll] after the first reads
// again: a record can become visible after a later one (writers' clocks
// differ by a little, a slow write lands late), and re-reading the last
// minute catches it. Records already returned are never returned twice.
const FollowLookback = time.Minute

// Follower returns new audit records as they are written, for `audit list
// --follow`. It is not safe for concurrent use.
type Follower struct {
	log   *Log
	q     Query
	mark  time.Time            // newest record time returned (or the first poll's time)
	seen  map[string]time.Time // ids returned within the lookback, with their times
	first bool
}

// Follow returns a Follower of the records matching q. Its first Poll
// returns what List(q) returns (the newest q.Limit), later polls every
// matching record not returned before; Until must be zero.
func (l *Log) Follow(q Query) *Follower {
	return &Follower{log: l, q: q, seen: map[string]time.Time{}, first: true}
}

// Poll returns the matching records not returned yet, oldest first.
func (f *Follower) Poll(ctx context.Context) ([]Record, error) {
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
		return nil, err
	}
	f.first = false
	var out []Record
	for _, r := range l.Records {
		if _, dup := f.seen[r.ID]; dup {
			continue
		}
		f.seen[r.ID] = r.Time
		if r.Time.After(f.mark) {
			f.mark = r.Time
		}
		out = append(out, r)
	}
	for id, t := range f.seen {
		if t.Before(f.mark.Add(-FollowLookback)) {
			delete(f.seen, id)
		}
	}
	slices.Reverse(out) // List is newest first
	return out, nil
}
