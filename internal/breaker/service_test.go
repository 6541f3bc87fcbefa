package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// The lever service enforces every rule of a change itself, whoever calls
// it (the CLI, the dashboard, a drill, an approval, an MCP proposal): a
// caller that forgets a rule cannot write past it.
func TestTheLeverServiceEnforcesTheContextsRules(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clock.NewFake(t0)
	ov := breaker.NewOverrides(st, clk).WithLog(audit.NewLog(st, clk, "ctx")).WithDurations(breaker.DurationPolicy{Max: time.Hour})
	for name, tc := range map[string]struct {
		req  breaker.ForceRequest
		want error
	}{
		"over the context's max-override": {breaker.ForceRequest{For: 2 * time.Hour}, breaker.ErrDurationTooLong},
		"an expiry past it":               {breaker.ForceRequest{ExpiresAt: t0.Add(90 * time.Minute)}, breaker.ErrDurationTooLong},
		"under the fleet's cache period":  {breaker.ForceRequest{For: time.Second}, breaker.ErrDurationTooShort},
		"an expiry in the past":           {breaker.ForceRequest{ExpiresAt: t0.Add(-time.Minute)}, breaker.ErrExpiryPast},
		"no expiry, unconfirmed":          {breaker.ForceRequest{}, breaker.ErrNoExpiryUnconfirmed},
		"no reason":                       {breaker.ForceRequest{For: time.Minute, Reason: " "}, breaker.ErrReasonRequired},
	} {
		t.Run(name, func(t *testing.T) {
			req := tc.req
			req.Dependency, req.Actor = "openai", "alice"
			if req.Reason == "" {
				req.Reason = "provider down"
			}
			for _, dry := range []bool{true, false} {
				_, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: []breaker.ForceRequest{req}, DryRun: dry})
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
	for _, req := range []breaker.ForceRequest{{For: time.Hour}, {ExpiresAt: t0.Add(30 * time.Minute)}, {NoExpiry: true}} {
		req.Dependency, req.Actor, req.Reason, req.Overwrite = "openai", "alice", "provider down", true
		if _, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: []breaker.ForceRequest{req}}); err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
	}
}

// A service with no audit log bound refuses every change: nothing is
// written that nothing would record.
func TestTheLeverServiceWithoutALogWritesNothing(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ov := breaker.NewOverrides(st, clock.NewFake(t0))
	_, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: forceReqs("openai")})
	if !errors.Is(err, breaker.ErrNoAuditLog) {
		t.Fatalf("force without a log: %v, want ErrNoAuditLog", err)
	}
	if _, err := st.Get(t.Context(), breaker.OverrideKey("openai")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the override was written without a record: %v", err)
	}
	if _, err := ov.Restore(t.Context(), breaker.RestoreRequest{Dependency: "openai"}); !errors.Is(err, breaker.ErrNoAuditLog) {
		t.Fatalf("restore without a log: %v, want ErrNoAuditLog", err)
	}
}

// The service announces each change once, after its commit, with what was
// written: never a dry run, a refusal, or a change asked to stay quiet.
func TestTheLeverServiceAnnouncesWhatItWrote(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clock.NewFake(t0)
	var heard []breaker.Announcement
	ov := breaker.NewOverrides(st, clk).WithLog(audit.NewLog(st, clk, "ctx")).
		WithAnnounce(func(_ context.Context, a breaker.Announcement) { heard = append(heard, a) })
	actor := func(context.Context) (string, error) { return "alice", nil }

	if _, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: forceReqs("openai", "core-api"), Actor: actor, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: forceReqs("openai", "core-api"), Actor: actor}); err != nil {
		t.Fatal(err)
	}
	// A conflict on one dependency: nothing written, nothing announced.
	if _, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: forceReqs("postgres", "openai"), Actor: actor}); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("force over an active override: %v, want a conflict", err)
	}
	if _, err := ov.ClearAll(t.Context(), breaker.ClearAll{Dependencies: []string{"openai"}, Reason: "quiet", Actor: actor, NoNotify: true}); err != nil {
		t.Fatal(err)
	}
	// A clear of one present and one absent override announces the one.
	if _, err := ov.ClearAll(t.Context(), breaker.ClearAll{Dependencies: []string{"core-api", "openai"}, Reason: "recovered", Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 2 {
		t.Fatalf("heard %d announcements, want 2 (the force and the loud clear): %+v", len(heard), heard)
	}
	f, c := heard[0], heard[1]
	if f.Action != breaker.ActionForceOpen || len(f.Forces) != 2 || f.Actor != "alice" || f.Reason != "drill" || f.Forces[0].Record.ID == "" {
		t.Errorf("force announced as %+v", f)
	}
	if c.Action != breaker.ActionClear || len(c.Clears) != 1 || c.Clears[0].Dependency != "core-api" || c.Reason != "recovered" {
		t.Errorf("clear announced as %+v", c)
	}
}

// A levers file's reconcile is held to the rules of a planned window: a
// reason and an end, still ahead and within max-override; a window near
// its end, with less than the 5 s minimum left, is still forced.
func TestReconcileHoldsAPlannedWindowToTheRules(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clock.NewFake(t0)
	ov := breaker.NewOverrides(st, clk).WithLog(audit.NewLog(st, clk, "ctx")).WithDurations(breaker.DurationPolicy{Max: time.Hour})
	read := &breaker.ReadState{}
	for name, tc := range map[string]struct {
		req  breaker.ForceRequest
		want error
	}{
		"no reason":         {breaker.ForceRequest{Reason: " ", ExpiresAt: t0.Add(time.Minute)}, breaker.ErrReasonRequired},
		"no end":            {breaker.ForceRequest{Reason: "window"}, breaker.ErrNoExpiryUnconfirmed},
		"ended":             {breaker.ForceRequest{Reason: "window", ExpiresAt: t0.Add(-time.Second)}, breaker.ErrExpiryPast},
		"past max-override": {breaker.ForceRequest{Reason: "window", ExpiresAt: t0.Add(2 * time.Hour)}, breaker.ErrDurationTooLong},
	} {
		req := tc.req
		req.Dependency, req.Actor, req.Read = "openai", "ci", read
		if _, err := ov.Reconcile(t.Context(), breaker.Reconcile{Forces: []breaker.ForceRequest{req}, Actor: "ci"}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := st.Get(t.Context(), breaker.OverrideKey("openai")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused window was written: %v", err)
	}
	req := breaker.ForceRequest{Dependency: "openai", Actor: "ci", Reason: "window", ExpiresAt: t0.Add(2 * time.Second), Read: read}
	if out, err := ov.Reconcile(t.Context(), breaker.Reconcile{Forces: []breaker.ForceRequest{req}, Actor: "ci"}); err != nil || !out.Forces[0].Written {
		t.Fatalf("a window with 2 s left: %+v %v, want it forced", out, err)
	}
}

// A break-glass is always announced: asked with --no-notify, it is refused
// before anything is written.
func TestABreakGlassCannotBeQuiet(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clock.NewFake(t0)
	ov := breaker.NewOverrides(st, clk).WithLog(audit.NewLog(st, clk, "ctx"))
	glass := &breaker.Gate{Decide: func(map[string]store.Item, map[string]*breaker.Override) (*breaker.Attach, error) {
		return &breaker.Attach{Approval: &audit.Approval{Decision: audit.DecisionBreakGlass}}, nil
	}}
	if _, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: forceReqs("openai"), Gate: glass, NoNotify: true}); !errors.Is(err, audit.ErrBreakGlassQuiet) {
		t.Fatalf("a quiet break-glass force: %v, want ErrBreakGlassQuiet", err)
	}
	if _, err := st.Get(t.Context(), breaker.OverrideKey("openai")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a quiet break-glass was written: %v", err)
	}
	if _, err := ov.ForceAll(t.Context(), breaker.ForceAll{Requests: forceReqs("openai"), Gate: glass}); err != nil {
		t.Fatalf("a loud break-glass force: %v", err)
	}
	if _, err := ov.ClearAll(t.Context(), breaker.ClearAll{Dependencies: []string{"openai"}, Gate: glass, NoNotify: true}); !errors.Is(err, audit.ErrBreakGlassQuiet) {
		t.Fatalf("a quiet break-glass clear: %v, want ErrBreakGlassQuiet", err)
	}
}
