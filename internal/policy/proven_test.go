package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
)

var admin = audit.Identity{Actor: "arn:aws:iam::123456789012:user/pat", Source: audit.ActorSTS, UserID: "AIDAPAT"}

const (
	strict = "@id(\"strict\")\n@approvals(\"1\")\npermit (principal, action, resource) when { context.approvals >= 1 };\n"
	loose  = "permit (principal, action, resource);\n"
)

func parsed(t *testing.T, text string) *policy.Set {
	t.Helper()
	set, err := policy.Parse(levers, "p.cedar", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The policy in force is the text its newest policy.set proof names: set
// by koshactl it stands; a text Put over it, the item deleted or an older
// one put back each stand out, and setting it again (even the same text)
// makes it stand again.
func TestPolicyStandsByItsProof(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.NewStore(t)
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	p := policy.NewPolicies(s, clk, levers)
	log := audit.NewLog(s, clk, "test")
	standing := func() policy.Standing {
		t.Helper()
		st, err := p.Standing(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := standing(); st.Problem != "" || st.Stored != nil || st.Newest != nil {
		t.Fatalf("an empty table: %+v", st)
	}
	if _, err := p.Set(ctx, log, parsed(t, strict), admin, "strict"); err != nil {
		t.Fatal(err)
	}
	first, err := s.Get(ctx, policy.Key)
	if err != nil {
		t.Fatal(err)
	}
	if st := standing(); st.Problem != "" || st.Newest == nil || st.Newest.Writer.Name != admin.Actor {
		t.Fatalf("after policy set: %+v", st)
	}
	stored, err := p.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stored.Check(); err != nil {
		t.Errorf("a set policy's check: %v", err)
	}

	// A permissive text put over it, its stale hash and proof kept.
	tampered := first.Clone()
	tampered["text"] = loose
	if err := s.Put(ctx, tampered, store.Always()); err != nil {
		t.Fatal(err)
	}
	if st := standing(); !strings.Contains(st.Problem, "written without koshactl policy set") {
		t.Errorf("a text put over the policy: %q", st.Problem)
	}
	// The same text set again by koshactl: not "unchanged" (its proof does
	// not name it), written with a proof of its own.
	clk.Advance(time.Minute)
	res, err := p.Set(ctx, log, parsed(t, loose), admin, "loose")
	if err != nil || res.Unchanged {
		t.Fatalf("setting the tampered text again: %+v, %v", res, err)
	}
	if st := standing(); st.Problem != "" {
		t.Errorf("after setting it again: %q", st.Problem)
	}
	if res, err := p.Set(ctx, log, parsed(t, loose), admin, "loose"); err != nil || !res.Unchanged {
		t.Errorf("the same proven text again: %+v, %v; want unchanged", res, err)
	}

	// The first item put back: an older set than the newest proof's.
	if err := s.Put(ctx, first, store.Always()); err != nil {
		t.Fatal(err)
	}
	if st := standing(); !strings.Contains(st.Problem, "put back") {
		t.Errorf("an older policy put back: %q", st.Problem)
	}

	// Deleted: proofs stand without it, since the oldest of them.
	if err := s.Delete(ctx, policy.Key, store.Always()); err != nil {
		t.Fatal(err)
	}
	if st := standing(); !strings.Contains(st.Problem, "deleted") || !st.Since.Equal(clk.Now().Add(-time.Minute)) {
		t.Errorf("a deleted policy: %q since %s", st.Problem, st.Since)
	}
	// Set again after its deletion: it stands (its versions start anew).
	clk.Advance(time.Minute)
	if _, err := p.Set(ctx, log, parsed(t, strict), admin, "strict again"); err != nil {
		t.Fatalf("setting a deleted policy again: %v", err)
	}
	if st := standing(); st.Problem != "" {
		t.Errorf("after setting a deleted policy again: %q", st.Problem)
	}
}

// An item without a proof (written by hand, or before koshactl kept
// proofs) is never used for a change that needs approval.
func TestAPolicyWithoutProofIsUnproven(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.NewStore(t)
	if err := s.Put(ctx, store.Item{store.PK: policy.Key, "text": strict, "version": int64(3), "since": int64(1)}, store.Always()); err != nil {
		t.Fatal(err)
	}
	stored, err := policy.NewPolicies(s, nil, levers).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stored.Check(); !errors.Is(err, policy.ErrUnproven) {
		t.Errorf("check of a policy without proof: %v, want ErrUnproven", err)
	}
	if err := stored.Verify(nil); !errors.Is(err, policy.ErrUnproven) {
		t.Errorf("verify of a policy without proof: %v, want ErrUnproven", err)
	}
}
