package resilience

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestFormatDeadline(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{t0.Add(7850 * time.Millisecond), "2026-03-01T12:00:07.850Z"},
		{t0, "2026-03-01T12:00:00.000Z"},
		// Truncated, never rounded up: the next hop must not get extra time.
		{t0.Add(999999999 * time.Nanosecond), "2026-03-01T12:00:00.999Z"},
		{t0.In(time.FixedZone("CET", 3600)), "2026-03-01T12:00:00.000Z"},
	}
	for _, tt := range tests {
		if got := FormatDeadline(tt.in); got != tt.want {
			t.Errorf("FormatDeadline(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseDeadline(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-03-01T12:00:07.850Z", t0.Add(7850 * time.Millisecond)},
		{"2026-03-01T12:00:07Z", t0.Add(7 * time.Second)},
		{"2026-03-01T12:00:07.123456789Z", t0.Add(7123456789 * time.Nanosecond)},
		{"2026-03-01T13:00:07.5+01:00", t0.Add(7500 * time.Millisecond)},
		{" 2026-03-01T12:00:07.850Z ", t0.Add(7850 * time.Millisecond)},
		{"1772366407850", t0.Add(7850 * time.Millisecond)}, // Unix milliseconds
	}
	for _, tt := range tests {
		got, err := ParseDeadline(tt.in)
		if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("ParseDeadline(%q) = %v, %v; want %v in UTC", tt.in, got, err, tt.want)
		}
	}
	// The last two are well-formed but outside the years RFC 3339 can carry
	// in UTC, so the hop could not pass them on.
	for _, bad := range []string{"", "tomorrow", "2026-03-01 12:00:07", "12:00:07Z", "-5", "99999999999999999999",
		"9223372036854775807", "0000-01-01T00:00:00+01:00"} {
		if _, err := ParseDeadline(bad); !errors.Is(err, ErrBadDeadline) {
			t.Errorf("ParseDeadline(%q) error %v, want ErrBadDeadline", bad, err)
		}
	}
}

func FuzzDeadlineRoundTrip(f *testing.F) {
	f.Add(int64(0))
	f.Add(t0.UnixNano())
	f.Add(t0.UnixNano() + 999999999)
	f.Add(int64(-1))
	f.Fuzz(func(t *testing.T, ns int64) {
		in := time.Unix(0, ns)
		s := FormatDeadline(in)
		out, err := ParseDeadline(s)
		if err != nil {
			t.Fatalf("ParseDeadline(FormatDeadline(%v) = %q): %v", in, s, err)
		}
		if out.After(in) || in.Sub(out) >= time.Millisecond {
			t.Fatalf("round trip of %v gave %v: must truncate to the millisecond", in, out)
		}
		if FormatDeadline(out) != s {
			t.Fatalf("format is not stable: %q then %q", s, FormatDeadline(out))
		}
	})
}

// TestDeadlinePropagationLLDExample follows LLD §2 step by step: the gateway
// gives search_knowledge_base 8 s, passes deadline-150ms to core-api, which
// computes its OpenAI and PostgreSQL timeouts with a 100 ms margin.
func TestDeadlinePropagationLLDExample(t *testing.T) {
	now := t0
	gatewayDeadline := now.Add(8 * time.Second)

	h := http.Header{}
	SetDeadlineHeader(h, gatewayDeadline, GatewayMargin)
	if got := h.Get(HeaderDeadline); got != "2026-03-01T12:00:07.850Z" {
		t.Fatalf("gateway → core-api header %q", got)
	}

	ctx, cancel, err := ContextFromHeader(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	remaining, ok := Remaining(ctx, now)
	if !ok || remaining != 7850*time.Millisecond {
		t.Fatalf("core-api remaining %v", remaining)
	}
	// The LLD rounds the 150 ms hop and network time into "remaining = 7.7 s".
	now = now.Add(150 * time.Millisecond)
	remaining, _ = Remaining(ctx, now)
	if remaining != 7700*time.Millisecond {
		t.Fatalf("core-api remaining after the hop %v", remaining)
	}
	if got := AttemptTimeout(remaining, InnerMargin, 2*time.Second); got != 2*time.Second {
		t.Fatalf("OpenAI timeout = %v, want min(7.7s-100ms, 2s) = 2s", got)
	}
	now = now.Add(1200 * time.Millisecond) // OpenAI answers in 1.1 s (+ overhead)
	remaining, _ = Remaining(ctx, now)
	if remaining != 6500*time.Millisecond {
		t.Fatalf("remaining before PostgreSQL %v", remaining)
	}
	if got := AttemptTimeout(remaining, InnerMargin, 3*time.Second); got != 3*time.Second {
		t.Fatalf("statement_timeout = %v, want min(6.5s-100ms, 3s) = 3s", got)
	}
}

func TestAttemptTimeout(t *testing.T) {
	tests := []struct {
		remaining, margin, cap, want time.Duration
	}{
		{7700 * time.Millisecond, 100 * time.Millisecond, 2 * time.Second, 2 * time.Second},
		{1 * time.Second, 150 * time.Millisecond, 2 * time.Second, 850 * time.Millisecond},
		{2100 * time.Millisecond, 100 * time.Millisecond, 2 * time.Second, 2 * time.Second},
		{100 * time.Millisecond, 100 * time.Millisecond, 2 * time.Second, 0},
		{50 * time.Millisecond, 100 * time.Millisecond, 2 * time.Second, -50 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := AttemptTimeout(tt.remaining, tt.margin, tt.cap); got != tt.want {
			t.Errorf("AttemptTimeout(%v, %v, %v) = %v, want %v", tt.remaining, tt.margin, tt.cap, got, tt.want)
		}
	}
}

func TestDeadlineHeaderHelpers(t *testing.T) {
	h := http.Header{}
	if _, ok, err := DeadlineFromHeader(h); ok || err != nil {
		t.Fatalf("absent header: ok %v err %v", ok, err)
	}
	ctx, cancel, err := ContextFromHeader(context.Background(), h)
	cancel()
	if _, has := ctx.Deadline(); has || err != nil {
		t.Fatal("no header must leave the context without a deadline")
	}
	h.Set(HeaderDeadline, "soon")
	if _, _, err := ContextFromHeader(context.Background(), h); !errors.Is(err, ErrBadDeadline) {
		t.Fatalf("malformed header: %v", err)
	}
	SetDeadlineHeader(h, time.Time{}, GatewayMargin)
	if h.Get(HeaderDeadline) != "" {
		t.Fatal("a zero deadline must remove the header")
	}
	// An earlier deadline already on the context wins.
	parent, cancelParent := context.WithDeadline(context.Background(), t0.Add(time.Second))
	defer cancelParent()
	SetDeadlineHeader(h, t0.Add(time.Hour), 0)
	ctx, cancel, _ = ContextFromHeader(parent, h)
	defer cancel()
	if d, _ := ctx.Deadline(); !d.Equal(t0.Add(time.Second)) {
		t.Fatalf("deadline %v, want the earlier parent deadline", d)
	}
	if _, ok := Remaining(context.Background(), t0); ok {
		t.Fatal("Remaining reported a deadline for a context without one")
	}
	ctx, cancel = WithBudget(context.Background(), t0, 8*time.Second)
	defer cancel()
	if d, _ := ctx.Deadline(); !d.Equal(t0.Add(8 * time.Second)) {
		t.Fatalf("WithBudget deadline %v", d)
	}
}
