package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/dataplane/circuit"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	F, S, I := circuit.Failure, circuit.Success, circuit.Ignored
	tests := []struct {
		name       string
		err        error
		outcome    circuit.Outcome
		retryable  bool
		retryAfter time.Duration
	}{
		{"nil", nil, S, false, 0},
		{"500", &StatusError{Code: 500}, F, false, 0},
		{"501", &StatusError{Code: 501}, F, false, 0},
		{"502", &StatusError{Code: 502}, F, true, 0},
		{"503 with Retry-After", &StatusError{Code: 503, RetryAfter: 2 * time.Second}, F, true, 2 * time.Second},
		{"504", &StatusError{Code: 504}, F, true, 0},
		{"429 honors Retry-After", &StatusError{Code: 429, RetryAfter: time.Second}, S, true, time.Second},
		{"400", &StatusError{Code: 400}, S, false, 0},
		{"404", &StatusError{Code: 404}, S, false, 0},
		{"409", &StatusError{Code: 409}, S, false, 0},
		{"wrapped 503", fmt.Errorf("get /v1/search: %w", &StatusError{Code: 503}), F, true, 0},
		{"attempt timeout", &Error{Kind: KindAttemptTimeout, Err: context.DeadlineExceeded}, F, true, 0},
		{"context deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), F, true, 0},
		{"os deadline", os.ErrDeadlineExceeded, F, true, 0},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, F, true, 0},
		{"conn error", &ConnError{Err: errors.New("reset by chaos")}, F, true, 0},
		{"dial error", &net.OpError{Op: "dial", Err: errors.New("refused")}, F, true, 0},
		{"ECONNREFUSED", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), F, true, 0},
		{"ECONNRESET", syscall.ECONNRESET, F, true, 0},
		{"unexpected EOF", io.ErrUnexpectedEOF, F, true, 0},
		{"temporary DNS", &net.DNSError{Err: "server misbehaving", IsTemporary: true}, F, true, 0},
		{"DNS not found", &net.DNSError{Err: "no such host", IsNotFound: true}, F, false, 0},
		{"caller canceled", fmt.Errorf("do: %w", context.Canceled), I, false, 0},
		{"budget spent before the attempt", &Error{Kind: KindDeadlineExceeded}, I, false, 0},
		{"nested circuit open", &Error{Kind: KindCircuitOpen}, F, false, 0},
		{"unknown error", errors.New("decode body: invalid character"), F, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Classify(tt.err)
			if c.Outcome != tt.outcome || c.Retryable != tt.retryable || c.RetryAfter != tt.retryAfter {
				t.Fatalf("Classify(%v) = %+v, want outcome %v retryable %v retry-after %v",
					tt.err, c, tt.outcome, tt.retryable, tt.retryAfter)
			}
		})
	}
}

func TestStatusErrorMessage(t *testing.T) {
	if got := (&StatusError{Code: 503, RetryAfter: 2 * time.Second}).Error(); got != "status 503 Service Unavailable (retry after 2s)" {
		t.Errorf("got %q", got)
	}
	if got := (&StatusError{Code: 599}).Error(); got != "status 599" {
		t.Errorf("got %q", got)
	}
	if got := (&ConnError{Err: syscall.ECONNRESET}).Error(); got != "connection error: connection reset by peer" {
		t.Errorf("got %q", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"Sun, 01 Mar 2026 12:00:05 GMT", 5 * time.Second, true},
		{"Sun, 01 Mar 2026 11:59:00 GMT", 0, true},
		{"999999999999", 24 * time.Hour, true},
		{"", 0, false},
		{"-1", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResponseError(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ok := &http.Response{StatusCode: 204, Header: http.Header{}}
	if err := ResponseError(ok, now); err != nil {
		t.Fatalf("204: %v", err)
	}
	r := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"3"}}}
	var se *StatusError
	if err := ResponseError(r, now); !errors.As(err, &se) || se.Code != 429 || se.RetryAfter != 3*time.Second {
		t.Fatalf("429: %v", err)
	}
	if c := Classify(ResponseError(r, now)); !c.Retryable || c.RetryAfter != 3*time.Second {
		t.Fatalf("a 429 response is not retried after its hint: %+v", c)
	}
}
