package tui

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

func TestStoreOverridesWriteAuditedChanges(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clocktest.NewFake(epoch)
	log := audit.NewLog(st, clk, "local")
	actor := "tester@test"
	levers := levertest.Levers(st, clk, log)
	ov := StoreOverrides{Overrides: breaker.NewOverrides(st, clk), Levers: levers.WithActor(func(context.Context) (string, error) { return actor, nil })}
	force := func(req ForceRequest) (breaker.ForceResult, error) {
		rep, err := ov.Force(ctx, req)
		return forced(rep), err
	}

	res, err := force(ForceRequest{Dependency: "openai", Reason: "INC-142", For: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.After.ExpiresAt != epoch.Add(30*time.Minute) || res.After.Actor != actor || res.Replaced {
		t.Errorf("force result = %+v", res)
	}
	list, err := ov.List(ctx)
	if err != nil || len(list.Overrides) != 1 || !list.Overrides[0].ActiveAt(epoch) {
		t.Fatalf("list = %+v, %v", list, err)
	}

	// Forcing again without having seen the override is a conflict...
	_, err = force(ForceRequest{Dependency: "openai", Reason: "again", For: time.Hour})
	var ce *breaker.ConflictError
	if !errors.As(err, &ce) || ce.Raced {
		t.Errorf("force over an unseen override: %v", err)
	}
	// ...as is replacing a version that is no longer current...
	stale := list.Overrides[0]
	stale.Version = 0
	if _, err = force(ForceRequest{Dependency: "openai", Reason: "again", For: time.Hour, Replace: &stale}); !errors.As(err, &ce) || !ce.Raced {
		t.Errorf("force over a changed override: %v", err)
	}
	// ...and replacing the one shown works.
	clk.Advance(time.Minute)
	res, err = force(ForceRequest{Dependency: "openai", Reason: "extend", For: time.Hour, Replace: &list.Overrides[0]})
	if err != nil || !res.Replaced || res.After.Version != 2 {
		t.Fatalf("replace = %+v, %v", res, err)
	}

	clk.Advance(time.Minute)
	rep, err := ov.Clear(ctx, "openai", "recovered")
	if clr := breaker.ClearResultOf(rep.Outcomes[0]); err != nil || clr.Before == nil || !clr.WasActive {
		t.Fatalf("clear = %+v, %v", clr, err)
	}
	recs, err := log.List(ctx, audit.Query{Subject: breaker.OverrideKey("openai")})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range recs.Records {
		actions = append(actions, r.Action+":"+r.Reason+":"+r.Actor)
	}
	want := []string{"breaker.clear:recovered:tester@test", "breaker.force-open:extend:tester@test", "breaker.force-open:INC-142:tester@test"}
	if len(actions) != len(want) {
		t.Fatalf("audit = %v, want %v", actions, want)
	}
	for i := range want {
		if actions[i] != want[i] {
			t.Errorf("audit[%d] = %s, want %s", i, actions[i], want[i])
		}
	}

	actorErr := errors.New("sts: expired token")
	ov.Levers = levers.WithActor(func(context.Context) (string, error) { return "", actorErr })
	if _, err := ov.Force(ctx, ForceRequest{Dependency: "openai", Reason: "x", For: time.Hour}); !errors.Is(err, actorErr) {
		t.Errorf("force without an actor: %v", err)
	}
	if l, _ := ov.List(ctx); len(l.Overrides) != 0 {
		t.Errorf("something was written without an actor: %+v", l)
	}
}
