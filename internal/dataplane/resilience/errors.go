package resilience

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Kind names the typed failures of the design: the error each layer fails
// fast with, plus the load shedder's.
type Kind uint8

// The kinds of [Error].
const (
	// KindDeadlineExceeded: the request's budget is spent (or below the
	// tool's minimum); nothing was started. Wire code "deadline_exceeded".
	KindDeadlineExceeded Kind = iota + 1
	// KindBulkheadFull: the dependency's bulkhead had no free slot within its
	// wait. Wire code "overloaded".
	KindBulkheadFull
	// KindCircuitOpen: the dependency's breaker refused the call (open,
	// forced open, or half-open with its probe slots taken). Wire code
	// "dependency_unavailable".
	KindCircuitOpen
	// KindAttemptTimeout: an attempt ran past its per-attempt timeout. Wire
	// code "timeout".
	KindAttemptTimeout
	// KindOverloaded: the instance sheds load (too many requests in flight).
	// Wire code "overloaded".
	KindOverloaded
)

// Sentinels matched by [Error] through errors.Is, one per [Kind].
var (
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	ErrBulkheadFull     = errors.New("bulkhead full")
	ErrCircuitOpen      = errors.New("circuit open")
	ErrAttemptTimeout   = errors.New("attempt timeout")
	ErrOverloaded       = errors.New("overloaded")
)

var kindInfo = [...]struct {
	name     string
	code     string
	sentinel error
	status   int
}{
	KindDeadlineExceeded: {"DeadlineExceeded", "deadline_exceeded", ErrDeadlineExceeded, http.StatusGatewayTimeout},
	KindBulkheadFull:     {"BulkheadFull", "overloaded", ErrBulkheadFull, http.StatusServiceUnavailable},
	KindCircuitOpen:      {"CircuitOpen", "dependency_unavailable", ErrCircuitOpen, http.StatusServiceUnavailable},
	KindAttemptTimeout:   {"AttemptTimeout", "timeout", ErrAttemptTimeout, http.StatusGatewayTimeout},
	KindOverloaded:       {"Overloaded", "overloaded", ErrOverloaded, http.StatusServiceUnavailable},
}

func (k Kind) valid() bool { return k >= KindDeadlineExceeded && int(k) < len(kindInfo) }

// String returns the design's name of the failure: "DeadlineExceeded",
// "BulkheadFull", "CircuitOpen", "AttemptTimeout" or "Overloaded".
func (k Kind) String() string {
	if !k.valid() {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindInfo[k].name
}

// Code returns the error code a client sees: "deadline_exceeded",
// "overloaded", "dependency_unavailable" or "timeout".
func (k Kind) Code() string {
	if !k.valid() {
		return "internal"
	}
	return kindInfo[k].code
}

// HTTPStatus returns the status an HTTP hop answers with: 504 for deadline
// and attempt timeouts, 503 for the others.
func (k Kind) HTTPStatus() int {
	if !k.valid() {
		return http.StatusInternalServerError
	}
	return kindInfo[k].status
}

// Error is a typed failure of a resilience layer. Match it with errors.Is
// against the sentinel of its kind (ErrCircuitOpen, ...), or errors.As to
// read the dependency and Retry-After hint.
type Error struct {
	// Kind says which layer failed the call.
	Kind Kind
	// Dependency is the downstream the call was for ("" for the load
	// shedder's instance-wide limit).
	Dependency string
	// RetryAfter, when positive, is how long the caller should wait before
	// trying again (an open breaker's remaining open time; 1 s when shed).
	RetryAfter time.Duration
	// Err is the underlying cause, if any (a breaker sentinel, the last
	// attempt's error, context.DeadlineExceeded).
	Err error
}

// Error reads "core-api: circuit open: circuit breaker open".
func (e *Error) Error() string {
	msg := e.Kind.String()
	if e.Kind.valid() {
		msg = kindInfo[e.Kind].sentinel.Error()
	}
	if e.Dependency != "" {
		msg = e.Dependency + ": " + msg
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is matches the sentinel of the error's kind.
func (e *Error) Is(target error) bool {
	return e.Kind.valid() && target == kindInfo[e.Kind].sentinel
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of the first [Error] in err's chain, or 0.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}
