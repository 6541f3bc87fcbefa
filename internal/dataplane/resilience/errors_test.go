package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		kind     Kind
		sentinel error
		name     string
		code     string
		status   int
	}{
		{KindDeadlineExceeded, ErrDeadlineExceeded, "DeadlineExceeded", "deadline_exceeded", http.StatusGatewayTimeout},
		{KindBulkheadFull, ErrBulkheadFull, "BulkheadFull", "overloaded", http.StatusServiceUnavailable},
		{KindCircuitOpen, ErrCircuitOpen, "CircuitOpen", "dependency_unavailable", http.StatusServiceUnavailable},
		{KindAttemptTimeout, ErrAttemptTimeout, "AttemptTimeout", "timeout", http.StatusGatewayTimeout},
		{KindOverloaded, ErrOverloaded, "Overloaded", "overloaded", http.StatusServiceUnavailable},
	}
	all := []error{ErrDeadlineExceeded, ErrBulkheadFull, ErrCircuitOpen, ErrAttemptTimeout, ErrOverloaded}
	for _, tt := range tests {
		err := fmt.Errorf("tool search_knowledge_base: %w", &Error{Kind: tt.kind, Dependency: "core-api"})
		for _, s := range all {
			if got := errors.Is(err, s); got != (s == tt.sentinel) {
				t.Errorf("%v: errors.Is(%v) = %v", tt.kind, s, got)
			}
		}
		if tt.kind.String() != tt.name || tt.kind.Code() != tt.code || tt.kind.HTTPStatus() != tt.status {
			t.Errorf("%d: name %q code %q status %d", tt.kind, tt.kind.String(), tt.kind.Code(), tt.kind.HTTPStatus())
		}
		if KindOf(err) != tt.kind {
			t.Errorf("KindOf = %v, want %v", KindOf(err), tt.kind)
		}
	}
	if KindOf(errors.New("plain")) != 0 || Kind(0).Code() != "internal" || Kind(99).String() != "Kind(99)" {
		t.Error("unknown kinds are not reported as such")
	}
}

func TestErrorMessageAndCause(t *testing.T) {
	err := &Error{Kind: KindCircuitOpen, Dependency: "core-api", RetryAfter: 12 * time.Second, Err: circuit.ErrOpen}
	want := "core-api: circuit open (retry after 12s): circuit breaker open"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, circuit.ErrOpen) {
		t.Error("cause not reachable through errors.Is")
	}
	d := &Error{Kind: KindDeadlineExceeded, Err: context.DeadlineExceeded}
	if !errors.Is(d, context.DeadlineExceeded) || d.Error() != "deadline exceeded: context deadline exceeded" {
		t.Errorf("deadline error %q", d.Error())
	}
}
