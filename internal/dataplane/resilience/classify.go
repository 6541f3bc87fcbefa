package resilience

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

// StatusError is an error answer from an HTTP-like dependency. Return it from
// an [AttemptFunc] so the layers can classify the answer: 5xx counts against
// the breaker, 502/503/504 and 429 are retried, other 4xx are neither.
type StatusError struct {
	// Code is the status code, 400..599.
	Code int
	// RetryAfter is the answer's Retry-After hint (0 when absent). Retries
	// wait at least this long.
	RetryAfter time.Duration
}

// Error reads "status 503 Service Unavailable (retry after 2s)".
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString("status ")
	b.WriteString(strconv.Itoa(e.Code))
	if t := http.StatusText(e.Code); t != "" {
		b.WriteByte(' ')
		b.WriteString(t)
	}
	if e.RetryAfter > 0 {
		b.WriteString(" (retry after ")
		b.WriteString(e.RetryAfter.String())
		b.WriteByte(')')
	}
	return b.String()
}

// ConnError is a failure to reach a dependency or a connection broken under
// a call (refused, reset, unreachable). Return it (or let a net error through)
// from an [AttemptFunc]; it counts against the breaker and is retried.
type ConnError struct {
	// Err is the underlying error.
	Err error
}

// Error reads "connection error: <cause>".
func (e *ConnError) Error() string {
	if e.Err == nil {
		return "connection error"
	}
	return "connection error: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ConnError) Unwrap() error { return e.Err }

// Class is how the layers treat one error: what the breaker counts, whether
// the retry layer may try again, and the least wait before it does.
type Class struct {
	Outcome    circuit.Outcome
	Retryable  bool
	RetryAfter time.Duration
}

// Classify applies the design's rules to an attempt's error:
//
//   - nil: success.
//   - [StatusError] 5xx: failure; 502, 503 and 504 are retryable.
//   - [StatusError] 429: retryable, honoring Retry-After; not a failure.
//   - [StatusError] other 4xx: a success for the breaker, never retried.
//   - timeouts ([ErrAttemptTimeout], context.DeadlineExceeded,
//     os.ErrDeadlineExceeded, a net.Error that timed out): failure, retryable.
//   - connection errors ([ConnError], *net.OpError, connection refused or
//     reset, unreachable networks, an unexpected EOF): failure, retryable.
//   - context.Canceled: the caller gave up; ignored, not retried.
//   - [ErrDeadlineExceeded]: the budget was spent before the attempt
//     started; ignored, not retried.
//   - anything else: failure, not retried (an unknown error is not assumed
//     safe to repeat).
//
// Retry-After is carried from any StatusError that has it.
func Classify(err error) Class {
	if err == nil {
		return Class{Outcome: circuit.Success}
	}
	var se *StatusError
	if errors.As(err, &se) {
		c := Class{Outcome: circuit.Success, RetryAfter: se.RetryAfter}
		switch {
		case se.Code >= 500:
			c.Outcome = circuit.Failure
			c.Retryable = se.Code == http.StatusBadGateway || se.Code == http.StatusServiceUnavailable ||
				se.Code == http.StatusGatewayTimeout
		case se.Code == http.StatusTooManyRequests:
			c.Retryable = true
		}
		return c
	}
	var re *Error
	if errors.As(err, &re) {
		switch re.Kind {
		case KindAttemptTimeout:
			return Class{Outcome: circuit.Failure, Retryable: true}
		case KindDeadlineExceeded:
			return Class{Outcome: circuit.Ignored}
		case KindBulkheadFull, KindCircuitOpen, KindOverloaded:
			// As any other error below: a failure, not retried.
		}
		return Class{Outcome: circuit.Failure}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Class{Outcome: circuit.Ignored}
	case isTimeout(err), isConnError(err):
		return Class{Outcome: circuit.Failure, Retryable: true}
	}
	return Class{Outcome: circuit.Failure}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isConnError(err error) bool {
	var ce *ConnError
	if errors.As(err, &ce) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return de.IsTemporary || de.IsTimeout
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, io.ErrUnexpectedEOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// ParseRetryAfter reads a Retry-After header value: delay seconds ("2") or an
// HTTP date, relative to now. A date in the past gives 0. ok is false for an
// empty or malformed value.
func ParseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(0, t.Sub(now)), true
}

// ResponseError returns nil for a response below 400, and otherwise a
// *[StatusError] carrying its code and Retry-After hint (read relative to
// now). It does not read or close the body.
func ResponseError(resp *http.Response, now time.Time) error {
	if resp.StatusCode < 400 {
		return nil
	}
	ra, _ := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	return &StatusError{Code: resp.StatusCode, RetryAfter: ra}
}
