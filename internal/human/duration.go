package human

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

// Duration writes d by the package's rule: 2d4h, 24h, 1h, 1h30m, 25m,
// 3m20s, 45s, 1.5s, 90ms, 250µs, 1ns, 0s.
func Duration(d time.Duration) string {
	if d < 0 {
		if d == time.Duration(-1<<63) {
			d++ // the one negative duration without a positive twin
		}
		return "-" + Duration(-d)
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Microsecond:
		return strconv.FormatInt(d.Nanoseconds(), 10) + "ns"
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	case d < time.Second:
		return decimal(d.Round(time.Microsecond), time.Millisecond) + "ms"
	case d < time.Minute:
		return decimal(d.Round(time.Millisecond), time.Second) + "s"
	case d < time.Hour:
		return pair(d, time.Minute, "m", time.Second, "s%02d")
	case d < 2*day:
		return pair(d, time.Hour, "h", time.Minute, "m%02d")
	}
	return pair(d, day, "d", time.Hour, "h%d")
}

// Age writes an age or a time left (set 25m ago, expires in 3h05m) as
// [Duration] does, at the precision a person reads one: to the second
// under a minute (rounded), whole seconds under ten minutes, whole minutes
// above (the rest dropped): 45s, 3m20s, 25m, 1h, 2d4h.
func Age(d time.Duration) string {
	switch a := max(d, -d); {
	case a < time.Minute:
		d = d.Round(time.Second)
	case a < 10*time.Minute:
		d = d.Truncate(time.Second)
	default:
		d = d.Truncate(time.Minute)
	}
	return Duration(d)
}

// decimal writes d in units of unit with the decimals it has.
func decimal(d, unit time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(unit), 'f', -1, 64)
}

// pair writes d's whole big units and, when not zero, its whole small units
// after them (format gives the small unit's digits, then its letter).
func pair(d, big time.Duration, bigName string, small time.Duration, format string) string {
	s := strconv.FormatInt(int64(d/big), 10) + bigName
	if n := (d % big) / small; n != 0 {
		s += fmt.Sprintf(format[1:], n) + format[:1]
	}
	return s
}

// ParseDuration reads a duration as a person writes one: Go's form (90m,
// 1h30m, 2.5s) and whole days in front of it (1d, 7d, 2d4h, the form
// [Duration] writes from two days up). A negative one is allowed (the
// caller says whether it makes sense); the error says what to write.
func ParseDuration(s string) (time.Duration, error) {
	rest, neg := s, false
	if r, ok := strings.CutPrefix(rest, "-"); ok {
		rest, neg = r, true
	}
	var days int64
	if i := strings.IndexByte(rest, 'd'); i > 0 {
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n > int64(maxDays) {
			return 0, fmt.Errorf("%q is not a duration like 90m, 24h or 7d", s)
		}
		days, rest = n, rest[i+1:]
	}
	var d time.Duration
	if rest != "" || days == 0 {
		v, err := time.ParseDuration(rest)
		if err != nil || (days > 0 && v < 0) || strings.HasPrefix(rest, "+") {
			return 0, fmt.Errorf("%q is not a duration like 90m, 24h or 7d", s)
		}
		d = v
	}
	total := time.Duration(days)*day + d
	if total < d {
		return 0, fmt.Errorf("%q is too long a duration", s)
	}
	if neg {
		total = -total
	}
	return total, nil
}

// maxDays is the most days a [time.Duration] holds.
const maxDays = (1<<63 - 1) / int64(day)

// DurationFlag is a command-line flag value (pflag.Value) read by
// [ParseDuration] and shown by [Duration].
type DurationFlag struct{ D *time.Duration }

// String shows the value as [Duration] writes it; zero is "0", which help
// text leaves out as the zero value.
func (f DurationFlag) String() string {
	if f.D == nil || *f.D == 0 {
		return "0"
	}
	return Duration(*f.D)
}

// Set reads s by [ParseDuration].
func (f DurationFlag) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*f.D = d
	return nil
}

// Type names the value in help text.
func (DurationFlag) Type() string { return "duration" }
