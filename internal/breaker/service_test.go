package breaker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The lever service enforces every rule of a change itself, whoever calls
// it (the CLI, the dashboard, a drill, an approval, an MCP proposal): a
// caller that forgets a rule cannot write past it.
func TestTheLeverServiceEnforcesTheContextsRules(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(st, clk).WithDurations(breaker.DurationPolicy{Max: time.Hour})
	for name, tc := range map[string]struct {
		req  forceReq
		want error
	}{
		"over the context's max-override": {forceReq{For: 2 * time.Hour}, breaker.ErrDurationTooLong},
		"an expiry past it":               {forceReq{ExpiresAt: t0.Add(90 * time.Minute)}, breaker.ErrDurationTooLong},
		"under the fleet's cache period":  {forceReq{For: time.Second}, breaker.ErrDurationTooShort},
		"an expiry in the past":           {forceReq{ExpiresAt: t0.Add(-time.Minute)}, breaker.ErrExpiryPast},
		"no expiry, unconfirmed":          {forceReq{}, breaker.ErrNoExpiryUnconfirmed},
		"no reason":                       {forceReq{For: time.Minute, Reason: " "}, breaker.ErrReasonRequired},
	} {
		t.Run(name, func(t *testing.T) {
			req := tc.req
			req.Dependency, req.Actor = "openai", "alice"
			if req.Reason == "" {
				req.Reason = "provider down"
			}
			for _, dry := range []bool{true, false} {
				c := req.change()
				c.DryRun = dry
				_, err := ov.Change(t.Context(), c)
				if !errors.Is(err, tc.want) {
					t.Fatalf("dry run %v: err = %v, want %v", dry, err, tc.want)
				}
			}
			if _, err := st.Get(t.Context(), breaker.OverrideKey("openai")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a refused force wrote the override: %v", err)
			}
		})
	}
	// Within the policy, and no expiry when the operator confirmed it.
	for _, req := range []forceReq{{For: time.Hour}, {ExpiresAt: t0.Add(30 * time.Minute)}, {NoExpiry: true}} {
		req.Dependency, req.Actor, req.Reason, req.Overwrite = "openai", "alice", "provider down", true
		if _, err := ov.Change(t.Context(), req.change()); err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
	}
}

// A service with no audit log bound refuses every change: nothing is
// written that nothing would record.
func TestTheLeverServiceWithoutALogWritesNothing(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ov := newLevers(st, clocktest.NewFake(t0)).WithLog(nil)
	if _, err := ov.Change(t.Context(), forceAll("al", "openai")); !errors.Is(err, lever.ErrNoAuditLog) {
		t.Fatalf("force without a log: %v, want ErrNoAuditLog", err)
	}
	if _, err := st.Get(t.Context(), breaker.OverrideKey("openai")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the override was written without a record: %v", err)
	}
	if _, _, err := breaker.Restore(t.Context(), ov.svc(), "openai", "al", "r", nil, breaker.RestoreParams{}); !errors.Is(err, lever.ErrNoAuditLog) {
		t.Fatalf("restore without a log: %v, want ErrNoAuditLog", err)
	}
}

// A change's report carries its announcement, with what was written:
// never a dry run, a refusal, or a change asked to stay quiet.
func TestTheLeverServiceAnnouncesWhatItWrote(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(st, clk)
	change := func(c lever.Change) *notify.Event {
		t.Helper()
		rep, err := ov.Change(t.Context(), c)
		if err != nil && !errors.Is(err, breaker.ErrConflict) {
			t.Fatal(err)
		}
		return rep.Event
	}
	dry := forceAll("alice", "openai", "core-api")
	dry.DryRun = true
	if ev := change(dry); ev != nil {
		t.Errorf("a dry run announced %+v", ev)
	}
	f := change(forceAll("alice", "openai", "core-api"))
	// A conflict on one dependency: nothing written, nothing announced.
	if ev := change(forceAll("alice", "postgres", "openai")); ev != nil {
		t.Errorf("a refused force announced %+v", ev)
	}
	quiet := breaker.Clear("quiet", "openai")
	quiet.Actor, quiet.NoNotify = "alice", true
	if ev := change(quiet); ev != nil {
		t.Errorf("a quiet clear announced %+v", ev)
	}
	// A clear of one present and one absent override announces the one.
	loud := breaker.Clear("recovered", "core-api", "openai")
	loud.Actor = "alice"
	c := change(loud)
	if f == nil || f.Action != breaker.ActionForceOpen || len(f.Levers) != 2 || f.Actor != "alice" || f.Reason != "drill" || f.Levers[0].AuditID == "" {
		t.Errorf("force announced as %+v", f)
	}
	if c == nil || c.Action != breaker.ActionClear || len(c.Levers) != 1 || c.Levers[0].Subject != "breaker#core-api" || c.Reason != "recovered" {
		t.Errorf("clear announced as %+v", c)
	}
}

// A levers file's window is held to the rules of a planned window: a
// reason and an end, still ahead and within max-override; a window near
// its end, with less than the 5 s minimum left, is still forced.
func TestAPlannedWindowIsHeldToTheRules(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(st, clk).WithDurations(breaker.DurationPolicy{Max: time.Hour})
	window := func(reason string, end time.Time) lever.Change {
		c := breaker.ForceOpen(reason, breaker.ForceParams{ExpiresAt: end, Planned: true}, "openai")
		c.Actor, c.Read = "ci", map[string]store.Item{"openai": nil}
		return c
	}
	for name, tc := range map[string]struct {
		c    lever.Change
		want error
	}{
		"no reason":         {window(" ", t0.Add(time.Minute)), breaker.ErrReasonRequired},
		"no end":            {window("window", time.Time{}), breaker.ErrNoExpiryUnconfirmed},
		"ended":             {window("window", t0.Add(-time.Second)), breaker.ErrExpiryPast},
		"past max-override": {window("window", t0.Add(2*time.Hour)), breaker.ErrDurationTooLong},
	} {
		if _, err := ov.Change(t.Context(), tc.c); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := st.Get(t.Context(), breaker.OverrideKey("openai")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused window was written: %v", err)
	}
	if rep, err := ov.Change(t.Context(), window("window", t0.Add(2*time.Second))); err != nil || !rep.Outcomes[0].Written {
		t.Fatalf("a window with 2 s left: %+v %v, want it forced", rep, err)
	}
}
