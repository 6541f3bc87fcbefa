package ratelimit_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// TestChangeOfAClientWithoutBucket: drain and set of a client with no
// bucket used to exit 0 and create one (a typo drained nobody). They are
// refused with exit 3, the nearest existing client suggested, nothing
// written; --create writes the bucket deliberately.
func TestChangeOfAClientWithoutBucket(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, c := range []string{"agent-1", "traffic-1"} {
		e.MustRun(0, "ratelimit", "drain", c, "--create", "--reason", "setup")
	}
	before := localItems(t, e)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"drain", "agnet-1"}, `no bucket for client "agnet-1" (did you mean "agent-1"?): nothing drained`},
		{[]string{"drain", "Traffic_1"}, `no bucket for client "Traffic_1" (did you mean "traffic-1"?)`},
		{[]string{"drain", "traffic-13", "--for", "1m"}, `no bucket for client "traffic-13" (did you mean "traffic-1"?)`},
		{[]string{"set", "agnet-1", "--tokens", "3"}, `no bucket for client "agnet-1" (did you mean "agent-1"?): nothing set`},
		{[]string{"drain", "zzz-unrelated"}, `no bucket for client "zzz-unrelated": nothing drained`},
		{[]string{"drain", "agnet-1", "--dry-run"}, `(did you mean "agent-1"?)`},
	} {
		r := e.Run(append([]string{"ratelimit"}, tc.args...)...)
		if r.Code != 3 || !strings.Contains(r.Stderr, tc.want) || !strings.Contains(r.Stderr, "--create") || r.Stdout != "" {
			t.Errorf("ratelimit %v: exit %d, stdout %q, stderr %q; want exit 3 saying %q and --create", tc.args, r.Code, r.Stdout, r.Stderr, tc.want)
		}
	}
	if after := localItems(t, e); len(after) != len(before) {
		t.Errorf("refused changes wrote items: %d before, %d after", len(before), len(after))
	}
	// Reset of a typo of an existing client is refused the same way (a
	// missing bucket is full, but the operator meant agent-1); reset has
	// no --create to offer. A client with no bucket and none near is
	// already full: nothing to reset, exit 0.
	r := e.Run("ratelimit", "reset", "agnet-1", "--reason", "typo")
	if r.Code != 3 || !strings.Contains(r.Stderr, `no bucket for client "agnet-1" (did you mean "agent-1"?): nothing reset`) ||
		strings.Contains(r.Stderr, "--create") || r.Stdout != "" {
		t.Errorf("ratelimit reset agnet-1: exit %d, stdout %q, stderr %q; want exit 3 with the hint", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.MustRun(0, "ratelimit", "reset", "zzz-unrelated", "--reason", "no such client"); !strings.Contains(r.Stdout, "already full") {
		t.Errorf("reset of a client with no bucket and none near: %q", r.Stdout)
	}
	if after := localItems(t, e); len(after) != len(before) {
		t.Errorf("refused resets wrote items: %d before, %d after", len(before), len(after))
	}
	// --create drains the bucket of a client not heard from yet.
	r = e.MustRun(0, "ratelimit", "drain", "new-client", "--create", "--reason", "refuse its first request")
	if !strings.Contains(r.Stdout, "Drained new-client") {
		t.Errorf("drain --create: %q", r.Stdout)
	}
}
