package cmdutil_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

func TestHumanTimes(t *testing.T) {
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	cases := []struct {
		t    time.Time
		tty  bool
		want string
	}{
		{now.Add(27 * time.Minute), true, "in 27m"},
		{now.Add(-3*time.Minute - 5*time.Second), true, "3m05s ago"},
		{now.Add(30 * time.Second), true, "in 30s"},
		{now.Add(3*time.Hour + 5*time.Minute), true, "in 3h05m"},
		{now.Add(-50 * time.Hour), true, "2d2h ago"},
		{now.Add(27 * time.Minute), false, "2026-11-29T19:27:00Z"},
		{time.Time{}, true, "-"},
	}
	for _, tc := range cases {
		if got := cmdutil.FormatTime(tc.t, now, tc.tty); got != tc.want {
			t.Errorf("FormatTime(%v, tty=%v) = %q, want %q", tc.t, tc.tty, got, tc.want)
		}
	}
}

func TestYAMLKeepsNumbersExact(t *testing.T) {
	var buf bytes.Buffer
	if err := cmdutil.PrintStructured(&buf, cmdutil.FormatYAML, map[string]any{"exp": int64(1795982421), "p": 0.25}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "exp: 1795982421\n") || !strings.Contains(buf.String(), "p: 0.25\n") {
		t.Errorf("yaml:\n%s", buf.String())
	}
}
