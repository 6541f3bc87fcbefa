package levers

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
)

// RecordReader reads audit records (*audit.Log).
type RecordReader interface {
	List(ctx context.Context, q audit.Query) (audit.Listing, error)
}

// Written returns the overrides of os that apply itself wrote for one of
// f's windows (keyed by [WrittenKey]): an override whose managed_by marker
// ([MarkerOf]) names f and is the one the record of its own write (its
// write_id's force-open record, an operator's, not the data plane's nor a
// record of asking) says was written, with the same expiry. A marker is a
// claim any writer of breaker# items can make, and so is an override's
// write_id; the record apply wrote with the override says what apply
// wrote. Only these overrides are managed by f ([State].Written): apply
// clears nothing else. One indexed read (by subject) per override whose
// marker names f, at once; an override marked for another file is that
// file's or nobody's, whatever its records say, and costs no read.
func (f *File) Written(ctx context.Context, rr RecordReader, os []breaker.Override) (map[string]bool, error) {
	out := map[string]bool{}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, o := range os {
		if m, ok := MarkerOf(o); !ok || m.File != f.Name || o.WriteID == "" {
			continue
		}
		wg.Go(func() {
			ok, err := writtenByApply(ctx, rr, o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				out[WrittenKey(o)] = true
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// WrittenKey names one write of one override in [File.Written]'s answer: its
// key and write id.
func WrittenKey(o breaker.Override) string {
	return breaker.OverrideKey(o.Dependency) + "@" + o.WriteID
}

// writtenByApply reads the records of o's dependency and says whether the
// record of o's write shows o as apply wrote it.
func writtenByApply(ctx context.Context, rr RecordReader, o breaker.Override) (bool, error) {
	key := breaker.OverrideKey(o.Dependency)
	l, err := rr.List(ctx, audit.Query{Subject: key, Action: breaker.ActionForceOpen})
	if err != nil {
		return false, fmt.Errorf("read the records of %s's override (is it a levers file's?): %w", o.Dependency, err)
	}
	for _, rec := range l.Records {
		if rec.Change != o.WriteID || rec.DataPlane || rec.Asked {
			continue
		}
		written, err := breaker.OverrideFromAuditState(o.Dependency, rec.After)
		if err != nil || written == nil {
			continue
		}
		if written.ManagedBy == o.ManagedBy && written.ExpiresAt.Equal(o.ExpiresAt) && written.WriteID == o.WriteID {
			return true, nil
		}
	}
	return false, nil
}
