package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/suggest"
)

// ErrNoBucket matches a [*NoBucketError]: a change of a client that has
// no bucket, asked with lever.Change.MustExist (a drain or set; a reset
// when an existing client is near). It exits 3 (not found).
var ErrNoBucket = exitcode.New(exitcode.NotFound, "no bucket")

// NoBucketError reports a client without a bucket item: no request of it
// has reached the data plane (a client gets its bucket with its first
// request), or the id is a typo of one that has. Nothing was written.
type NoBucketError struct {
	Op     Op
	Client string
	// Suggestion is the existing client Client is a likely typo of ("" if
	// none is near, or the table is too large to look).
	Suggestion string
}

// Error reads `no bucket for client "agnet-1" (did you mean "agent-1"?)`.
func (e *NoBucketError) Error() string {
	s := fmt.Sprintf("no bucket for client %q", e.Client)
	if e.Suggestion != "" {
		s += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
	}
	return s
}

// Is makes errors.Is(err, ErrNoBucket) true, and so exit 3.
func (e *NoBucketError) Is(target error) bool {
	return target == ErrNoBucket || errors.Is(ErrNoBucket, target)
}

// suggestScanItems bounds the scan [Buckets.Closest] makes for a
// suggestion: a table of more buckets gets a suggestion only when a near
// client is among the first this many read.
const suggestScanItems = 20_000

// clientSeparators are ignored when comparing client ids for a suggestion,
// and case is too (Traffic_1 is near traffic-1).
var clientSeparators = strings.NewReplacer("-", "", "_", "", ".", "", ":", "")

// Closest returns the existing client nearest to client within two edits
// (ignoring case and separators), reading at most [suggestScanItems]
// bucket keys with a scan of segments parallel segments; "" when none is
// near. It is for the error of a client without a bucket, not for a
// decision.
func (b *Buckets) Closest(ctx context.Context, client string, segments int) (string, error) {
	var ids []string
	n := 0
	for it, err := range b.store.Scan(ctx, store.ScanQuery{Prefix: KeyPrefix, Segments: segments}) {
		if err != nil {
			return "", err
		}
		if id := strings.TrimPrefix(it.PK(), KeyPrefix); id != client {
			ids = append(ids, id)
		}
		if n++; n >= suggestScanItems {
			break
		}
	}
	norm := func(s string) string { return clientSeparators.Replace(strings.ToLower(s)) }
	return suggest.Closest(client, ids, 3, norm), nil
}
