package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderDeadline carries a request's absolute deadline from hop to hop.
const HeaderDeadline = "X-Request-Deadline"

// Safety margins each hop subtracts from the deadline it passes on, so the
// caller always gets a well-formed error before its own timeout fires.
const (
	// GatewayMargin: mcp-gateway → core-api.
	GatewayMargin = 150 * time.Millisecond
	// InnerMargin: calls behind core-api (OpenAI, PostgreSQL) and other
	// inner hops.
	InnerMargin = 100 * time.Millisecond
)

// ErrBadDeadline is wrapped by [ParseDeadline] for a malformed value.
var ErrBadDeadline = errors.New("malformed request deadline")

// deadlineLayout is RFC 3339 in UTC with milliseconds, the precision the
// deadline travels with.
const deadlineLayout = "2006-01-02T15:04:05.000Z"

// FormatDeadline renders an absolute deadline for [HeaderDeadline]: RFC 3339
// in UTC with millisecond precision, truncated (never rounded up, so a hop
// never gets more time than it was given), e.g. "2026-03-01T12:00:07.850Z".
func FormatDeadline(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(deadlineLayout)
}

// ParseDeadline reads a [HeaderDeadline] value. It accepts RFC 3339 with any
// fractional precision and offset, and (for peers that send epoch time) a
// plain integer of Unix milliseconds. The result is in UTC. A deadline outside
// the years 0000 to 9999 in UTC is malformed: [FormatDeadline] could not pass
// it on in a form the next hop reads.
func ParseDeadline(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	var t time.Time
	if s != "" && strings.Trim(s, "0123456789") == "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("parse deadline %q: %w", s, ErrBadDeadline)
		}
		t = time.UnixMilli(ms)
	} else {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return time.Time{}, fmt.Errorf("parse deadline %q: %w", s, ErrBadDeadline)
		}
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, fmt.Errorf("parse deadline %q: year %d in UTC: %w", s, y, ErrBadDeadline)
	}
	return t, nil
}

// HopDeadline is the deadline a hop passes downstream: its own deadline less
// its margin.
func HopDeadline(deadline time.Time, margin time.Duration) time.Time {
	return deadline.Add(-margin)
}

// SetDeadlineHeader writes deadline less margin into h as [HeaderDeadline].
// A zero deadline removes the header.
func SetDeadlineHeader(h http.Header, deadline time.Time, margin time.Duration) {
	if deadline.IsZero() {
		h.Del(HeaderDeadline)
		return
	}
	h.Set(HeaderDeadline, FormatDeadline(HopDeadline(deadline, margin)))
}

// DeadlineFromHeader reads [HeaderDeadline] from h. ok is false when the
// header is absent; a malformed header is an error.
func DeadlineFromHeader(h http.Header) (deadline time.Time, ok bool, err error) {
	v := h.Get(HeaderDeadline)
	if v == "" {
		return time.Time{}, false, nil
	}
	t, err := ParseDeadline(v)
	if err != nil {
		return time.Time{}, false, err
	}
	return t, true, nil
}

// ContextFromHeader is the server side of propagation: it returns ctx bounded
// by the request's [HeaderDeadline] (an earlier deadline already on ctx
// wins). Without the header, ctx is returned unchanged with a no-op cancel.
// Always call cancel.
func ContextFromHeader(ctx context.Context, h http.Header) (context.Context, context.CancelFunc, error) {
	d, ok, err := DeadlineFromHeader(h)
	if err != nil || !ok {
		return ctx, func() {}, err
	}
	ctx, cancel := context.WithDeadline(ctx, d)
	return ctx, cancel, nil
}

// WithBudget starts a request's deadline at now+budget, as the gateway does
// when a tool call arrives (8 s for search_knowledge_base). An earlier
// deadline already on ctx wins.
func WithBudget(ctx context.Context, now time.Time, budget time.Duration) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, now.Add(budget))
}

// Remaining returns how much of ctx's deadline is left at now, and false
// when ctx has no deadline.
func Remaining(ctx context.Context, now time.Time) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return d.Sub(now), true
}

// AttemptTimeout is the per-attempt cap of the design:
// min(remaining - margin, attemptCap). It is zero or negative when the
// budget cannot fit an attempt.
func AttemptTimeout(remaining, margin, attemptCap time.Duration) time.Duration {
	return min(remaining-margin, attemptCap)
}
