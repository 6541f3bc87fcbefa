package ratelimit_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// A bucket pk written by a hostile tool is shown escaped, never raw.
func TestHostileBucketKeyIsShownEscaped(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "ratelimit", "list")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(e.StateDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{"rl#evil\x1b]0;title\x07", "rl#bidi\u202eexe", "rl#cr\rFORGED"} {
		if err := s.Put(ctx, store.Item{store.PK: pk, "tokens": 1.0, "updated_at": clitest.Epoch.UnixMilli()}, store.Always()); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	r := e.MustRun(0, "ratelimit", "list")
	termtest.AssertSafe(t, "stdout", r.Stdout)
	termtest.AssertSafe(t, "stderr", r.Stderr)
	for _, want := range []string{`evil\x1b]0;title\x07`, `bidi\u202eexe`, `cr\rFORGED`} {
		if !strings.Contains(r.Stdout+r.Stderr, want) {
			t.Errorf("%q not shown:\n%s\n%s", want, r.Stdout, r.Stderr)
		}
	}
}

// --reason follows the one reason rule: refused by name and position, exit 2,
// nothing written.
func TestRateLimitReasonFollowsTheOneReasonRule(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	r := e.MustRun(exitcode.Usage, "ratelimit", "drain", "--create", "alice", "--reason", "incident\u202e")
	termtest.AssertSafe(t, "stderr", r.Stderr)
	if !strings.Contains(r.Stderr, `reason has a bidi control (\u202e) at character 9`) || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	if items := localItems(t, e); len(items) != 0 {
		t.Errorf("a refused reason wrote %v", items)
	}
	e.MustRun(0, "ratelimit", "drain", "--create", "alice", "--reason", strings.Repeat("é", 400))
}
