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
