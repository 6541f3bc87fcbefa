package sessions

import (
	"fmt"
	"time"

	"github.com/kosha-platform/koshactl/internal/human"
)

// Defaults of [Limits].
const (
	// SessionIdleTimeout closes an HTTP session no request has used for
	// this long: a client that went away does not hold its session for
	// ever.
	SessionIdleTimeout = 30 * time.Minute
	// DefaultMaxSessions is how many HTTP sessions may be open at once.
	DefaultMaxSessions = 32
)

// The ranges a context or a flag may set [Limits] to.
const (
	MinSessionIdle = time.Minute
	MaxSessionIdle = 24 * time.Hour
	MaxMaxSessions = 1024
)

// Limits bound the HTTP transport's sessions, each of which holds
// memory until it is closed. Zero values take the defaults.
type Limits struct {
	// Max is how many sessions may be open at once; a request for a new
	// one (an initialize without a session) beyond it is refused (HTTP 503,
	// a JSON-RPC error saying the cap and the fix). Zero means
	// [DefaultMaxSessions].
	Max int
	// Idle closes a session no request has used for this long (the idle
	// cap). Zero means [SessionIdleTimeout].
	Idle time.Duration
}

// Check refuses limits outside their ranges: 1 to
// [MaxMaxSessions] sessions, an idle timeout from [MinSessionIdle] to
// [MaxSessionIdle] (zero: the default).
func Check(l Limits) error {
	if l.Max < 0 || l.Max > MaxMaxSessions {
		return fmt.Errorf("max sessions %d is out of range: give 1 to %d (default %d)", l.Max, MaxMaxSessions, DefaultMaxSessions)
	}
	if l.Idle != 0 && (l.Idle < MinSessionIdle || l.Idle > MaxSessionIdle) {
		return fmt.Errorf("session idle timeout %s is out of range: give %s to %s (default %s)", human.Duration(l.Idle),
			human.Duration(MinSessionIdle), human.Duration(MaxSessionIdle), human.Duration(SessionIdleTimeout))
	}
	return nil
}

// WithDefaults is l with its zero values set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.Max == 0 {
		l.Max = DefaultMaxSessions
	}
	if l.Idle == 0 {
		l.Idle = SessionIdleTimeout
	}
	return l
}
