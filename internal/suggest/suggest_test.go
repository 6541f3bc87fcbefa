package suggest_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/suggest"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"openai", "openai", 0}, {"open-ai", "openai", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if got := suggest.Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"core-api", "openai", "postgres", "screening-sim"}
	strip := func(s string) string { return strings.ReplaceAll(s, "-", "") }
	if got := suggest.Closest("open-ai", known, 3, strip); got != "openai" {
		t.Errorf("open-ai -> %q", got)
	}
	if got := suggest.Closest("postgers", known, 3, nil); got != "postgres" {
		t.Errorf("postgers -> %q", got)
	}
	if got := suggest.Closest("billing", known, 3, nil); got != "" {
		t.Errorf("billing should suggest nothing, got %q", got)
	}
}
