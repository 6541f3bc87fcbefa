package resilience

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// FuzzParseDeadline feeds arbitrary X-Request-Deadline values to the parser a
// hop runs on every request. Whatever it accepts must be a UTC instant the hop
// can pass on: formatting it and parsing it back gives the same instant to the
// millisecond, through a real header, and the value it passes on is stable.
// Whatever it refuses must be ErrBadDeadline.
//
//	go test -run '^$' -fuzz '^FuzzParseDeadline$' -fuzztime 20s ./internal/dataplane/resilience
func FuzzParseDeadline(f *testing.F) {
	for _, seed := range []string{
		"2026-03-01T12:00:07.850Z",
		"2026-03-01T12:00:07Z",
		"2026-03-01T12:00:07.123456789Z",
		"2026-03-01T13:00:07.5+01:00",
		" 2026-03-01T12:00:07.850Z ",
		"1772366407850",
		"0",
		"9223372036854775807",
		"0000-01-01T00:00:00+01:00",
		"9999-12-31T23:59:59.999Z",
		"tomorrow",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		d, err := ParseDeadline(value)
		if err != nil {
			if !errors.Is(err, ErrBadDeadline) {
				t.Fatalf("ParseDeadline(%q) error %v does not match ErrBadDeadline", value, err)
			}
			return
		}
		if d.Location() != time.UTC {
			t.Fatalf("ParseDeadline(%q) = %v, not in UTC", value, d)
		}
		passed := FormatDeadline(d)
		back, err := ParseDeadline(passed)
		if err != nil {
			t.Fatalf("ParseDeadline(%q) = %v, which formats as %q, which does not parse: %v", value, d, passed, err)
		}
		if want := d.Truncate(time.Millisecond); !back.Equal(want) {
			t.Fatalf("ParseDeadline(%q) = %v, passed on as %q, read back as %v; want %v", value, d, passed, back, want)
		}
		if again := FormatDeadline(back); again != passed {
			t.Fatalf("the passed-on value is not stable: %q then %q", passed, again)
		}

		h := http.Header{}
		h.Set(HeaderDeadline, value)
		fromHeader, ok, err := DeadlineFromHeader(h)
		if value != "" && (!ok || err != nil || !fromHeader.Equal(d)) {
			t.Fatalf("DeadlineFromHeader(%q) = %v, %v, %v; ParseDeadline gave %v", value, fromHeader, ok, err, d)
		}
		next := http.Header{}
		SetDeadlineHeader(next, d, 0)
		if d.IsZero() {
			passed = "" // documented: a zero deadline removes the header
		}
		if got := next.Get(HeaderDeadline); got != passed {
			t.Fatalf("SetDeadlineHeader(%v) wrote %q, want %q", d, got, passed)
		}
	})
}
