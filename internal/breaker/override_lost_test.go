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
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// With no retry at all (one attempt), a lost answer is a send failure, not a
// refusal: the write still landed, and the re-read must say so, for a force
// and for a clear.
func TestLostAnswerWithoutRetryIsResolvedByTheReread(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, dynalite.Start(t))
	s := dynamotest.NewStore(t, p.URL()) // one attempt per request
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	ov := breaker.NewOverrides(s, clk)
	log := audit.NewLog(s, clk, "test")
	ctx := context.Background()

	p.LoseNext("PutItem", 1, faultproxy.Reset)
	res, rec, err := ov.ForceAudited(ctx, log, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour})
	if err != nil || !res.Confirmed || rec.ID == "" {
		t.Fatalf("force with its answer lost: confirmed %v, record %q, err %v; want confirmed and recorded", res.Confirmed, rec.ID, err)
	}
	got, err := ov.Get(ctx, "openai")
	if err != nil || got.WriteID != res.After.WriteID || got.WriteID == "" {
		t.Fatalf("stored override %+v, %v; want the write's token %q", got, err, res.After.WriteID)
	}

	p.LoseNext("DeleteItem", 1, faultproxy.Reset)
	cr, crec, err := ov.ClearAudited(ctx, log, "openai", "me", "over")
	if err != nil || cr.Before == nil || !cr.Confirmed || crec.ID == "" {
		t.Fatalf("clear with its answer lost: %+v, record %q, err %v; want cleared, confirmed and recorded", cr, crec.ID, err)
	}
	if _, err := ov.Get(ctx, "openai"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("override after the clear: %v, want not found", err)
	}
	if p.Lost("PutItem") != 1 || p.Lost("DeleteItem") != 1 {
		t.Fatalf("lost %d PutItem, %d DeleteItem answers; want 1 each", p.Lost("PutItem"), p.Lost("DeleteItem"))
	}
}

// A refusal on the first attempt, the item gone, is someone else's clear:
// "already clear", nothing recorded as this one's.
func TestClearRefusedOnFirstAttemptWithItemGoneIsAlreadyClear(t *testing.T) {
	t.Parallel()
	s := dynamotest.NewStore(t, dynalite.Start(t))
	clk := clock.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	ov := breaker.NewOverrides(s, clk)
	ctx := context.Background()
	if _, err := ov.Force(ctx, breaker.ForceRequest{Dependency: "openai", Reason: "incident", Actor: "me", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	outs, err := ov.ClearAll(ctx, audit.NewLog(s, clk, "test"), breaker.ClearAll{Dependencies: []string{"openai"}, Reason: "x",
		Confirm: func([]breaker.ClearResult) error {
			// Someone else clears it between our read and our delete.
			return s.Delete(ctx, breaker.OverrideKey("openai"), store.IfPresent())
		}})
	if err != nil || len(outs) != 1 || outs[0].Written || outs[0].Result.Before != nil || outs[0].Result.Confirmed {
		t.Fatalf("clear after someone else's: %+v, %v; want already clear, nothing written", outs, err)
	}
}
