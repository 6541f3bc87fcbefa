//go:build !unix

package fsutil

import "time"

// Lock is a no-op where flock(2) does not exist: callers keep their own
// compare-and-set checks as the only guard there.
func Lock(string, time.Duration) (release func(), err error) { return func() {}, nil }
