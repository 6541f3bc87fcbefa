package fsutil

import (
	"errors"
	"time"
)

// ErrLocked reports a [Lock] another process held past the wait.
var ErrLocked = errors.New("lock held")

// lockPoll is how often Lock tries a held lock again.
const lockPoll = 5 * time.Millisecond
