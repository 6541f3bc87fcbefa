package human_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/human"
)

func TestDurationReadsByOneRule(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                               "0s",
		250 * time.Microsecond:          "250µs",
		90 * time.Millisecond:           "90ms",
		12300 * time.Microsecond:        "12.3ms",
		time.Second:                     "1s",
		1500 * time.Millisecond:         "1.5s",
		1234567 * time.Microsecond:      "1.235s",
		45 * time.Second:                "45s",
		time.Minute:                     "1m",
		3*time.Minute + 20*time.Second:  "3m20s",
		9*time.Minute + 5*time.Second:   "9m05s",
		12*time.Minute + 5*time.Second:  "12m05s",
		25*time.Minute + 30*time.Second: "25m30s",
		time.Hour:                       "1h",
		time.Hour + 30*time.Minute:      "1h30m",
		3*time.Hour + 5*time.Minute + 59*time.Second: "3h05m",
		23*time.Hour + 59*time.Minute:                "23h59m",
		24 * time.Hour:                               "24h",
		47*time.Hour + 59*time.Minute:                "47h59m",
		48 * time.Hour:                               "2d",
		52 * time.Hour:                               "2d4h",
		-90 * time.Second:                            "-1m30s",
		time.Duration(math.MinInt64):                 "-106751d23h",
		time.Duration(math.MaxInt64):                 "106751d23h",
	} {
		if got := human.Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", time.Duration(d), got, want)
		}
	}
}

// What Duration writes, Go reads back, to the precision written.
func TestDurationParsesBack(t *testing.T) {
	for _, d := range []time.Duration{time.Hour, 90 * time.Minute, 45 * time.Second, 1500 * time.Millisecond,
		90 * time.Millisecond, 250 * time.Microsecond, 9*time.Minute + 5*time.Second, 24 * time.Hour, 3*time.Hour + 5*time.Minute} {
		back, err := time.ParseDuration(human.Duration(d))
		if err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", human.Duration(d), back, err, d)
		}
	}
}

func TestNumber(t *testing.T) {
	for x, want := range map[float64]string{19: "19", 0.5374: "0.537", -2.5: "-2.5", -0.0001: "0", 1e-9: "0"} {
		if got := human.Number(x); got != want {
			t.Errorf("Number(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestAgeDropsWhatAPersonDoesNotRead(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1400 * time.Millisecond:                               "1s",
		59600 * time.Millisecond:                              "1m",
		3*time.Minute + 20*time.Second + 900*time.Millisecond: "3m20s",
		25*time.Minute + 30*time.Second:                       "25m",
		time.Hour + 59*time.Second:                            "1h",
		3*time.Hour + 5*time.Minute + 30*time.Second:          "3h05m",
		52*time.Hour + 30*time.Minute:                         "2d4h",
		-(25*time.Minute + 30*time.Second):                    "-25m",
	} {
		if got := human.Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}

// A whole number of hours reads "1h": the dashboard's force confirmation
// says "for 1h" for a 1h override, and its smoke test waits for that.
func TestAgeReadsWholeHoursPlainly(t *testing.T) {
	for d, want := range map[time.Duration]string{
		45 * time.Second:            "45s",
		90 * time.Second:            "1m30s",
		12 * time.Minute:            "12m",
		time.Hour:                   "1h",
		2 * time.Hour:               "2h",
		3*time.Hour + 5*time.Minute: "3h05m",
		50 * time.Hour:              "2d2h",
		time.Hour + 59*time.Second:  "1h",
		time.Hour + time.Minute:     "1h01m",
	} {
		if got := human.Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}

// Days are read where durations are given (--since 1d): what Duration
// writes from two days up (2d4h) reads back, and a bad one says what to
// write.
func TestParseDurationReadsDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"1d": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "2d4h": 52 * time.Hour, "90m": 90 * time.Minute,
		"1h30m": 90 * time.Minute, "0": 0, "-5h": -5 * time.Hour, "1d30m": 24*time.Hour + 30*time.Minute,
	} {
		if got, err := human.ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "1x", "xd", "1d-5h", "1.5d", "1dd", "99999999999999d"} {
		if _, err := human.ParseDuration(bad); err == nil || !strings.Contains(err.Error(), "7d") && !strings.Contains(err.Error(), "too long") {
			t.Errorf("ParseDuration(%q) = %v, want an error naming the form (7d)", bad, err)
		}
	}
	for _, d := range []time.Duration{49 * time.Hour, 72 * time.Hour, 90 * 24 * time.Hour, 30 * time.Minute} {
		if back, err := human.ParseDuration(human.Duration(d)); err != nil || back != d {
			t.Errorf("ParseDuration(Duration(%v)) = %v, %v", d, back, err)
		}
	}
}
