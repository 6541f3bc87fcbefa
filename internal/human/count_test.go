package human_test

import (
	"testing"

	"github.com/kosha-platform/koshactl/internal/human"
)

// "1 requests" read wrong: one helper says a count with its noun.
func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		noun string
		want string
	}{
		{1, "request", "1 request"}, {2, "request", "2 requests"}, {0, "item", "0 items"},
		{1, "dependency", "1 dependency"}, {3, "dependency", "3 dependencies"}, {2, "key", "2 keys"},
		{1, "breaker override", "1 breaker override"}, {4, "rate-limit bucket", "4 rate-limit buckets"},
	} {
		if got := human.Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
