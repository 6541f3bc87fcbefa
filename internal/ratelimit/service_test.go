package ratelimit_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// The bucket lever service enforces its rules whoever calls it, and
// announces what it wrote, once, after the commit.
func TestTheBucketServiceRefusesAndAnnounces(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	b := newBuckets(t, s, clk)
	drain := applyAll{Changes: []ratelimit.Change{{Op: ratelimit.OpDrain, Client: "c1"}, {Op: ratelimit.OpDrain, Client: "c2"}},
		Reason: "abuse", Actor: func(context.Context) (string, error) { return "al", nil }}

	// No audit log bound: nothing that nothing would record.
	if _, err := b.ApplyAll(t.Context(), drain); !errors.Is(err, lever.ErrNoAuditLog) {
		t.Fatalf("drain without a log: %v, want ErrNoAuditLog", err)
	}
	if _, _, err := b.ApplyAudited(t.Context(), "al", "x", ratelimit.Change{Op: ratelimit.OpReset, Client: "c1"}); !errors.Is(err, lever.ErrNoAuditLog) {
		t.Fatalf("a drill's change without a log: %v, want ErrNoAuditLog", err)
	}

	lb := b.WithLog(audit.NewLog(s, clk, "ctx"))
	var heard []*notify.Event
	apply := func(op applyAll) error {
		rep, err := lb.Report(t.Context(), op)
		if rep.Event != nil {
			heard = append(heard, rep.Event)
		}
		return err
	}
	bad := drain
	bad.Reason = "two\nlines"
	if err := apply(bad); !errors.Is(err, audit.ErrInvalidReason) {
		t.Fatalf("a reason with a newline: %v, want ErrInvalidReason", err)
	}
	quiet := drain
	quiet.DryRun = true
	if err := apply(quiet); err != nil {
		t.Fatal(err)
	}
	if err := apply(drain); err != nil {
		t.Fatal(err)
	}
	// Drained already: nothing written, nothing announced; and --no-notify.
	if err := apply(drain); err != nil {
		t.Fatal(err)
	}
	reset := applyAll{Changes: []ratelimit.Change{{Op: ratelimit.OpReset, Client: "c1"}}, Reason: "ok", NoNotify: true,
		Actor: func(context.Context) (string, error) { return "al", nil }}
	if err := apply(reset); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 1 || heard[0].Action != ratelimit.ActionDrain || heard[0].Actor != "al" || heard[0].Reason != "abuse" || len(heard[0].Levers) != 2 {
		t.Fatalf("heard %+v, want the one drain of two buckets", heard)
	}
	if st, _ := lb.Get(t.Context(), "c1"); st.Tokens != st.Limits.Capacity {
		t.Errorf("the quiet reset was not written: %+v", st)
	}
}
