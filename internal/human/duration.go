package human

import (
	"fmt"
	"strconv"
	"time"
)

const day = 24 * time.Hour

// Duration writes d by the package's rule: 2d4h, 24h, 1h, 1h30m, 25m,
// 3m20s, 45s, 1.5s, 90ms, 250µs, 0s.
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
