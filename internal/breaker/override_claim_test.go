package breaker_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// A write_id is unique to koshactl's own writes, but an item written by
// hand (copied with the AWS CLI from another dependency's item) may carry a
// token already consumed by a clear. That clear's claim is then no claim on
// this item: a clear of the copy deletes it, and must record it, never
// report another subject's record as its own.
func TestClearOfAnItemReusingAClearedTokenIsRecorded(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	clk := clock.NewFake(t0)
	ov := breaker.NewOverrides(s, clk)
	log := audit.NewLog(s, clk, "test")
	ctx := context.Background()
	if _, _, err := ov.ForceAudited(ctx, log, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "alice", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	orig, err := s.Get(ctx, breaker.OverrideKey("openai"))
	if err != nil {
		t.Fatal(err)
	}
	// Someone copies openai's item onto core-api by hand, token and all.
	copied := maps.Clone(orig)
	copied[store.PK] = breaker.OverrideKey("core-api")
	delete(copied, "ix_override")
	copied["reason"] = "copied by hand"
	if err := s.Put(ctx, copied, store.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ov.ClearAudited(ctx, log, "openai", "alice", "over"); err != nil {
		t.Fatal(err)
	}
	res, rec, err := ov.ClearAudited(ctx, log, "core-api", "bob", "cleanup")
	if err != nil {
		t.Fatalf("clear of the copy: %v", err)
	}
	if res.Before == nil || res.Theirs != nil || rec.ID == "" || rec.Subject != breaker.OverrideKey("core-api") || rec.Actor != "bob" {
		t.Fatalf("clear of the copy: %+v (theirs %+v), record %+v; want bob's own record of core-api's clear", res, res.Theirs, rec)
	}
	l, err := log.List(ctx, audit.Query{Subject: breaker.OverrideKey("core-api"), Action: breaker.ActionClear, Scan: true})
	if err != nil || len(l.Records) != 1 || l.Records[0].Actor != "bob" {
		t.Fatalf("core-api's clear records %+v, %v; want bob's alone", l.Records, err)
	}
}
