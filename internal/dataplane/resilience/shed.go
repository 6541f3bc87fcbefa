package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// Load-shedding defaults (LLD §7).
const (
	// DefaultMaxInFlight is MAX_IN_FLIGHT: requests in flight per instance
	// above it are shed.
	DefaultMaxInFlight = 64
	// DefaultMinBudget is a tool's default minimum remaining budget at start.
	DefaultMinBudget = 300 * time.Millisecond
	// ShedRetryAfter is the Retry-After of a shed request.
	ShedRetryAfter = time.Second
)

// LoadShedder applies the design's load-shedding rules at request and tool
// start. It is safe for concurrent use.
type LoadShedder struct {
	max      int64
	inFlight atomic.Int64
	shed     atomic.Uint64
	clock    clock.Clock
	overload *Error // shared, immutable
}

// NewLoadShedder returns a shedder admitting up to maxInFlight concurrent
// requests (zero means 64). A nil clk means the wall clock.
func NewLoadShedder(maxInFlight int, clk clock.Clock) *LoadShedder {
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &LoadShedder{
		max:      int64(maxInFlight),
		clock:    clk,
		overload: &Error{Kind: KindOverloaded, RetryAfter: ShedRetryAfter},
	}
}

// Enter admits a request, or sheds it with an error matching [ErrOverloaded]
// (Retry-After 1 s) when MaxInFlight requests are already in flight. Call
// [LoadShedder.Leave] when an admitted request ends.
func (s *LoadShedder) Enter() error {
	if s.inFlight.Add(1) > s.max {
		s.inFlight.Add(-1)
		s.shed.Add(1)
		return s.overload
	}
	return nil
}

// Leave ends a request admitted by Enter.
func (s *LoadShedder) Leave() { s.inFlight.Add(-1) }

// InFlight returns the requests in flight.
func (s *LoadShedder) InFlight() int { return int(s.inFlight.Load()) }

// MaxInFlight returns the limit.
func (s *LoadShedder) MaxInFlight() int { return int(s.max) }

// Shed counts requests shed since construction.
func (s *LoadShedder) Shed() uint64 { return s.shed.Load() }

// Middleware sheds requests above the in-flight limit with 503 and
// Retry-After: 1 before they reach next.
func (s *LoadShedder) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.Enter(); err != nil {
			WriteError(w, err)
			return
		}
		defer s.Leave()
		next.ServeHTTP(w, r)
	})
}

// Tool is what the shedder needs to know of an MCP tool at its start.
type Tool struct {
	// Name is the tool's name ("search_knowledge_base").
	Name string
	// Budget is the tool's request budget (8 s for search_knowledge_base);
	// the request deadline becomes now+Budget unless it is already earlier.
	// Zero keeps the incoming deadline.
	Budget time.Duration
	// MinBudget is the least remaining budget worth starting with. Zero
	// means 300 ms.
	MinBudget time.Duration
	// Dependencies are what the tool calls. When there is exactly one, an
	// open breaker on it fails the tool immediately.
	Dependencies []*Dependency
}

// StartTool admits a tool call. It returns ctx bounded by the tool's budget,
// or fails without calling anything downstream:
//
//   - remaining budget below the tool's minimum: an error matching
//     [ErrDeadlineExceeded] (code deadline_exceeded);
//   - the breaker of the tool's only dependency open or forced open: an
//     error matching [ErrCircuitOpen] (code dependency_unavailable) with the
//     breaker's remaining open time as RetryAfter.
//
// Always call cancel.
func (s *LoadShedder) StartTool(ctx context.Context, t Tool) (context.Context, context.CancelFunc, error) {
	now := s.clock.Now()
	cancel := context.CancelFunc(func() {})
	if t.Budget > 0 {
		ctx, cancel = WithBudget(ctx, now, t.Budget)
	}
	minBudget := t.MinBudget
	if minBudget <= 0 {
		minBudget = DefaultMinBudget
	}
	if rem, ok := Remaining(ctx, now); ok && rem < minBudget {
		return ctx, cancel, &Error{Kind: KindDeadlineExceeded, Err: fmt.Errorf("tool %s: %v left, needs %v", t.Name, max(rem, 0), minBudget)}
	}
	if len(t.Dependencies) == 1 {
		if d := t.Dependencies[0]; d.Open(ctx) {
			return ctx, cancel, &Error{Kind: KindCircuitOpen, Dependency: d.Name, RetryAfter: d.Breaker.RemainingOpen()}
		}
	}
	return ctx, cancel, nil
}

// ErrorBody is the JSON body [WriteError] sends.
type ErrorBody struct {
	Error      string `json:"error"`
	Message    string `json:"message"`
	Dependency string `json:"dependency,omitempty"`
	RetryAfter int    `json:"retry_after_s,omitempty"`
}

// WriteError answers an HTTP request with a typed failure: the kind's status
// (503 or 504), Retry-After in whole seconds (rounded up) when the error has
// a hint, and an [ErrorBody]. An error that is not an *[Error] is a 500.
func WriteError(w http.ResponseWriter, err error) {
	body := ErrorBody{Error: "internal", Message: err.Error()}
	status := http.StatusInternalServerError
	var e *Error
	if errors.As(err, &e) {
		status = e.Kind.HTTPStatus()
		body.Error = e.Kind.Code()
		body.Dependency = e.Dependency
		if e.RetryAfter > 0 {
			body.RetryAfter = int(math.Ceil(e.RetryAfter.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(body.RetryAfter))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
