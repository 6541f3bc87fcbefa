package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
	"github.com/kosha-platform/koshactl/internal/dataplane/resilience"
)

// Tool outcomes, the outcome label of kosha_tool_calls_total besides the
// error codes.
const (
	ToolOK       = "ok"
	ToolDegraded = "degraded"
	ToolDeferred = "deferred"
)

// Error codes of failed tool calls (ToolError.Code).
const (
	ErrCodeDependencyUnavailable = "dependency_unavailable"
	ErrCodeDependencyError       = "dependency_error"
	ErrCodeDeadlineExceeded      = "deadline_exceeded"
	ErrCodeTimeout               = "timeout"
	ErrCodeOverloaded            = "overloaded"
	ErrCodeInvalidParams         = "invalid_params"
	ErrCodeRateLimited           = "rate_limited"
	ErrCodeUnauthorized          = "unauthorized"
)

// ReasonEmbeddingsUnavailable is search_knowledge_base's degraded_reason
// when openai did not answer.
const ReasonEmbeddingsUnavailable = "embeddings_unavailable"

// toolSpec describes a tool for tools/list.
type toolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

var toolSpecs = []toolSpec{
	{ToolSearchKnowledgeBase, "Search the knowledge base (hybrid ranking with embeddings; full-text only, marked degraded, when openai is down).",
		json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"top_k":{"type":"integer","minimum":1,"maximum":10}},"required":["query"]}`)},
	{ToolScreenEntity, "Screen a person or organization against sanctions lists (deferred when screening-sim is down).",
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"country":{"type":"string"},"entity_type":{"type":"string","enum":["person","organization"]}},"required":["name"]}`)},
	{ToolRaiseDispute, "Raise a dispute on a card transaction (written with its outbox event; send an idempotency_key to retry safely).",
		json.RawMessage(`{"type":"object","properties":{"transaction_id":{"type":"string"},"reason":{"type":"string"},"amount":{"type":"number"},"idempotency_key":{"type":"string"}},"required":["transaction_id","reason"]}`)},
	{ToolFlagTransaction, "Flag a transaction for manual review (written with its outbox event; send an idempotency_key to retry safely).",
		json.RawMessage(`{"type":"object","properties":{"transaction_id":{"type":"string"},"reason":{"type":"string"},"idempotency_key":{"type":"string"}},"required":["transaction_id","reason"]}`)},
	{ToolGetServiceHealth, "Report this gateway instance's view of its dependencies (answers even when core-api is down).",
		json.RawMessage(`{"type":"object","properties":{}}`)},
}

// Tool arguments.
type (
	searchArgs struct {
		Query string `json:"query"`
		TopK  int    `json:"top_k"`
	}
	screenArgs struct {
		Name       string `json:"name"`
		Country    string `json:"country"`
		EntityType string `json:"entity_type"`
	}
	writeArgs struct {
		TransactionID  string   `json:"transaction_id"`
		Reason         string   `json:"reason"`
		Amount         *float64 `json:"amount"`
		IdempotencyKey string   `json:"idempotency_key"`
	}
)

// Tool answers (structuredContent).
type (
	// SearchResult is search_knowledge_base's answer.
	SearchResult struct {
		Results []SearchHit `json:"results"`
		// Ranking is "hybrid" (embeddings and full text) or "full_text".
		Ranking        string `json:"ranking"`
		Degraded       bool   `json:"degraded"`
		DegradedReason string `json:"degraded_reason,omitempty"`
	}
	// ScreenResult is screen_entity's answer: a verdict, or deferred.
	ScreenResult struct {
		// Status is clear, potential_match or deferred.
		Status     string    `json:"status"`
		Name       string    `json:"name"`
		Score      float64   `json:"score,omitempty"`
		Lists      []string  `json:"lists,omitempty"`
		ScreenedAt time.Time `json:"screened_at,omitzero"`
		// RetryAfter and DeferralID are set when deferred.
		RetryAfter int    `json:"retry_after_s,omitempty"`
		DeferralID string `json:"deferral_id,omitempty"`
		Reason     string `json:"reason,omitempty"`
	}
	// WriteResult is raise_dispute's and flag_transaction_for_review's
	// answer.
	WriteResult struct {
		// Status is accepted (a dispute) or flagged.
		Status        string `json:"status"`
		ID            string `json:"id"`
		TransactionID string `json:"transaction_id"`
		EventID       string `json:"event_id"`
		// Outbox is pending until the relay publishes the event.
		Outbox string `json:"outbox"`
		// Duplicate is true when the idempotency key replayed an earlier write.
		Duplicate bool `json:"duplicate"`
	}
	// HealthResult is get_service_health's answer, from gateway state only.
	HealthResult struct {
		Instance string `json:"instance"`
		// Status is ok (every breaker closed), degraded or unavailable
		// (core-api refused: no data tool can answer).
		Status       string             `json:"status"`
		Dependencies []DependencyHealth `json:"dependencies"`
		InFlight     int                `json:"in_flight"`
		MaxInFlight  int                `json:"max_in_flight"`
	}
	// DependencyHealth is one breaker's state on the instance.
	DependencyHealth struct {
		Name         string `json:"name"`
		State        string `json:"state"`
		BreakerState int    `json:"breaker_state"`
		RetryAfter   int    `json:"retry_after_s,omitempty"`
		Override     string `json:"override_reason,omitempty"`
	}
)

// toolError is a failed tool call.
type toolError struct {
	ToolError
	cause error
}

// Error returns the message.
func (e *toolError) Error() string { return e.Message }

// Unwrap returns the downstream error behind the failure.
func (e *toolError) Unwrap() error { return e.cause }

func invalidParams(format string, args ...any) *toolError {
	msg := fmt.Sprintf(format, args...)
	return &toolError{ToolError: ToolError{Code: ErrCodeInvalidParams, Message: msg}}
}

// decodeArgs reads a tool's arguments strictly.
func decodeArgs(raw json.RawMessage, v any) *toolError {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidParams("arguments: %v", err)
	}
	return nil
}

// seconds rounds d up to whole seconds (at least 1 for a positive d).
func seconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

// failure turns a downstream call's error into the tool error a client
// sees, naming the dependency.
func failure(dep string, err error) *toolError {
	te := &toolError{cause: err, ToolError: ToolError{Dependency: dep, Message: err.Error()}}
	var re *resilience.Error
	var ue *upstreamError
	switch {
	case errors.As(err, &re):
		te.RetryAfter = seconds(re.RetryAfter)
		if re.Dependency != "" {
			te.Dependency = re.Dependency
		}
		switch re.Kind {
		case resilience.KindCircuitOpen:
			te.Code = ErrCodeDependencyUnavailable
		case resilience.KindDeadlineExceeded:
			te.Code = ErrCodeDeadlineExceeded
		case resilience.KindAttemptTimeout:
			te.Code = ErrCodeTimeout
			te.RetryAfter = max(te.RetryAfter, 1)
		case resilience.KindBulkheadFull, resilience.KindOverloaded:
			te.Code = ErrCodeOverloaded
			te.RetryAfter = max(te.RetryAfter, 1)
		default:
			te.Code = ErrCodeDependencyError
		}
	case errors.As(err, &ue):
		te.Code, te.Dependency, te.RetryAfter = ErrCodeDependencyError, ue.dependency, 1
		if ue.status.Code == 504 {
			te.Code = ErrCodeTimeout
		}
	case errors.Is(err, context.DeadlineExceeded):
		te.Code = ErrCodeDeadlineExceeded
	default:
		te.Code = ErrCodeDependencyError
		te.RetryAfter = 1
	}
	return te
}

// upstreamError is core-api answering 5xx because of its own dependencies:
// 503 when one of them (postgres) failed, naming it for the client; 504 when
// its budget ran out before it could call one (the deadline's margins make
// core-api answer before the gateway's timer fires). Either is a 5xx for the
// gateway's breaker and retry layers.
type upstreamError struct {
	dependency string
	status     *resilience.StatusError
	cause      error
}

func newUpstreamError(dep string, cause error) *upstreamError {
	if resilience.KindOf(cause) == resilience.KindDeadlineExceeded {
		return &upstreamError{dependency: CoreAPI, cause: cause, status: &resilience.StatusError{Code: 504}}
	}
	return &upstreamError{dependency: dep, cause: cause, status: &resilience.StatusError{Code: 503}}
}

// Error says what core-api answered and why.
func (e *upstreamError) Error() string {
	if e.status.Code == 504 {
		return fmt.Sprintf("core-api answered 504: its budget ran out before it could call %v", e.cause)
	}
	return fmt.Sprintf("core-api answered 503: %s: %v", e.dependency, e.cause)
}

// Unwrap returns the 503 status, so the layers classify it as core-api's
// 5xx.
func (e *upstreamError) Unwrap() error { return e.status }

// watchlist is the sandbox's tiny sanctions list.
var watchlist = map[string][]string{
	"ivanov":    {"EU consolidated list"},
	"petrov":    {"OFAC SDN"},
	"sanctions": {"UN security council"},
	"blocked":   {"OFAC SDN", "UK HMT"},
}

// screenVerdict is screening-sim's deterministic answer for a name.
func screenVerdict(name string) (string, float64, []string) {
	var lists []string
	for _, t := range tokenize(name) {
		lists = append(lists, watchlist[t]...)
	}
	if len(lists) > 0 {
		return "potential_match", 0.92, lists
	}
	return "clear", 0.03, nil
}

// healthOf reports an instance's breakers from its own state: no
// downstream is called, so it answers while core-api is down.
func healthOf(in *Instance, refresh time.Duration) HealthResult {
	h := HealthResult{Instance: in.name, Status: "ok", InFlight: in.Shedder().InFlight(), MaxInFlight: in.Shedder().MaxInFlight()}
	for _, d := range in.reg.Dependencies() {
		if d.Breaker == nil {
			continue
		}
		st := d.Breaker.State()
		dh := DependencyHealth{Name: d.Name, State: st.String(), BreakerState: int(st), RetryAfter: seconds(in.retryHint(d.Name, refresh))}
		if st == circuit.ForcedOpen && d.Force != nil {
			dh.Override = d.Force.Last().Reason
		}
		h.Dependencies = append(h.Dependencies, dh)
		switch {
		case d.Name == CoreAPI && st.Rejecting():
			h.Status = "unavailable"
		case st != circuit.Closed && h.Status == "ok":
			h.Status = "degraded"
		}
	}
	return h
}

// trimArg bounds a free-text argument for echoing.
func trimArg(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n]
	}
	return s
}
