package breaker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
)

// ForceAll is the boundary where a force's names are checked: well-formed,
// none twice, known to the context; a refusal reads and writes nothing.
func TestForceAllChecksNamesBeforeReading(t *testing.T) {
	known := []string{"core-api", "openai"}
	cases := []struct {
		name  string
		deps  []string
		known []string
		want  error
	}{
		{"invalid", []string{"openai", "Open AI"}, known, breaker.ErrInvalidDependency},
		{"twice", []string{"openai", "core-api", "openai"}, known, breaker.ErrNamedTwice},
		{"unknown", []string{"openai", "open-ai"}, known, breaker.ErrUnknownDependency},
		{"invalid with no known rule", []string{"-x"}, nil, breaker.ErrInvalidDependency},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &counted{Store: openStore(t)}
			clk := clocktest.NewFake(t0)
			c := forceAll("al", tc.deps...)
			c.Known = tc.known
			_, err := newLevers(s, clk).Change(t.Context(), c)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if n := s.batchKeys.Load(); n != 0 {
				t.Fatalf("read %d keys before refusing the names", n)
			}
		})
	}
	var unknown *breaker.UnknownDependencyError
	err := breaker.CheckDependencies([]string{"open-ai"}, known)
	if !errors.As(err, &unknown) || unknown.Suggestion != "openai" {
		t.Fatalf("err = %v, want an unknown dependency suggesting openai", err)
	}
	if err := breaker.CheckDependencies([]string{"anything"}, nil); err != nil {
		t.Fatalf("no known list applies no known rule: %v", err)
	}
}

// A force is decided once, before the confirmation, and written from that
// decision; the item is stamped at the write, so the time an operator takes
// to confirm does not shorten --for, and a replacement of an override that
// lapsed meanwhile reads as a plain force.
func TestForceAllWritesTheDecidedPlanStampedAtTheWrite(t *testing.T) {
	st := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(st, clk)
	log := audit.NewLog(st, clk, "ctx")
	if _, err := ov.Force(t.Context(), forceReq{Dependency: "core-api", Reason: "held", Actor: "bob", For: time.Minute}); err != nil {
		t.Fatal(err)
	}
	var plans []breaker.ForceResult
	c := breaker.ForceOpen("drill", breaker.ForceParams{For: time.Hour, Overwrite: true}, "core-api", "openai")
	c.Known, c.Actor = []string{"core-api", "openai"}, "al"
	rep, err := lever.Do(t.Context(), ov.WithLog(log).svc(), c, func(p *lever.Planned) error {
		for _, pl := range p.Plans {
			plans = append(plans, pl.Result.(breaker.ForceResult))
		}
		clk.Advance(2 * time.Minute) // the operator reads the prompt
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	outs := rep.Outcomes
	if !plans[0].Replaced || plans[1].Replaced || !plans[0].After.CreatedAt.Equal(t0) {
		t.Fatalf("plans = %+v, want core-api's active override replaced, decided at t0", plans)
	}
	wrote := t0.Add(2 * time.Minute)
	for i, o := range outs {
		if !o.Written || o.Record.ID == "" {
			t.Fatalf("outcome %d = %+v, want written and audited", i, o)
		}
		a := breaker.ForceResultOf(o).After
		if !a.CreatedAt.Equal(wrote) || !a.ExpiresAt.Equal(wrote.Add(time.Hour)) || a.Version != plans[i].After.Version {
			t.Fatalf("written %s = created %s expires %s v%d, want created %s expires %s v%d", a.Dependency, a.CreatedAt, a.ExpiresAt, a.Version,
				wrote, wrote.Add(time.Hour), plans[i].After.Version)
		}
		got, err := ov.Get(t.Context(), a.Dependency)
		if err != nil || got.WriteID != a.WriteID {
			t.Fatalf("stored %s = %+v, %v; want the write %s", a.Dependency, got, err, a.WriteID)
		}
	}
	if breaker.ForceResultOf(outs[0]).Replaced {
		t.Fatal("core-api's override lapsed during the confirmation: the write replaced an expired one, not an active one")
	}
}

// CheckForce is the force rule without a write: an active override someone
// else holds is a conflict unless overwritten or seen; a lapsed or absent
// one is not.
func TestCheckForceIsTheForceRule(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	held := &breaker.Override{Dependency: "openai", State: breaker.OverrideStateForcedOpen, Actor: "bob", Version: 3,
		CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour)}
	lapsed := *held
	lapsed.ExpiresAt = now.Add(-time.Second)
	seen, other := int64(3), int64(2)
	for _, tc := range []struct {
		name     string
		req      breaker.ForceParams
		before   *breaker.Override
		conflict bool
	}{
		{"absent", breaker.ForceParams{NoExpiry: true}, nil, false},
		{"held", breaker.ForceParams{NoExpiry: true}, held, true},
		{"held, overwrite", breaker.ForceParams{Overwrite: true, NoExpiry: true}, held, false},
		{"held, seen", breaker.ForceParams{SeenVersion: &seen, NoExpiry: true}, held, false},
		{"held, seen another version", breaker.ForceParams{SeenVersion: &other, Overwrite: true, NoExpiry: true}, held, true},
		{"lapsed", breaker.ForceParams{NoExpiry: true}, &lapsed, false},
	} {
		err := breaker.CheckForce(tc.req, tc.before, now)
		var ce *breaker.ConflictError
		if got := errors.As(err, &ce); got != tc.conflict || (!tc.conflict && err != nil) {
			t.Errorf("%s: CheckForce = %v, want conflict %v", tc.name, err, tc.conflict)
		}
	}
}
