package faultproxy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// The proxy applies the request and loses its answer: the SDK retries the
// transaction with its token; moto, which does not honor tokens, refuses
// the retry by the change's own conditions, and store.Apply settles that
// as landed from the refused items. Without a fault, the same change
// answers normally.
func TestLostAnswerIsAppliedAndTheRetryIsSettled(t *testing.T) {
	endpoint := moto.Start(t)
	p := faultproxy.Start(t, endpoint)
	ctx := context.Background()
	opts := moto.Options(p.URL())
	opts.MaxAttempts = 3 // the SDK's retry is what meets the change's own conditions
	cfg, err := awsconf.Load(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := dynamo.NewFromConfig(cfg, dynamotest.TableName(t))
	if _, err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	change := func(v int64, cond store.Condition) store.Change {
		tok, _ := store.NewWriteID()
		rec := store.Item{store.PK: "audit#" + tok, store.WriteIDAttr: tok}
		return store.Change{Token: tok, Proof: rec.PK(), Ops: []store.Op{store.PutOp(store.Item{store.PK: "k", "v": v, store.WriteIDAttr: tok}, cond),
			store.PutOp(rec, store.IfAbsent())}}
	}
	if _, err := store.Apply(ctx, s, change(1, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	p.LoseNext("TransactWriteItems", 1, faultproxy.Reset)
	res, err := store.Apply(ctx, s, change(2, store.IfEquals("v", int64(1))))
	if err != nil || !res.Confirmed {
		t.Fatalf("change whose answer was lost: %+v, %v; want it confirmed", res, err)
	}
	if p.Lost("TransactWriteItems") != 1 || p.Seen("TransactWriteItems") != 3 {
		t.Fatalf("lost %d, seen %d TransactWriteItems, want 1 lost of 3", p.Lost("TransactWriteItems"), p.Seen("TransactWriteItems"))
	}
	it, err := s.Get(ctx, "k")
	if v, _ := it.Int("v"); err != nil || v != 2 {
		t.Fatalf("item after the lost answer: %v, %v; want v 2 (the server applied it)", it, err)
	}
	// A refusal on the first attempt is a conflict.
	if _, err = store.Apply(ctx, s, change(3, store.IfEquals("v", int64(1)))); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("first-attempt refusal: %v, want a conflict", err)
	}
	// Per operation: a lost GetItem answer does not touch PutItem.
	p.LoseNext("GetItem", 1, faultproxy.Reset)
	if _, err := s.Get(ctx, "k"); err != nil {
		t.Fatalf("get retried after a lost answer: %v", err)
	}
	if p.Lost("GetItem") != 1 {
		t.Fatalf("lost %d GetItem answers, want 1", p.Lost("GetItem"))
	}
}

// A stalled request is never forwarded: the client gives up (its context
// canceled) and the server never applied it.
func TestStalledRequestIsNeverApplied(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.LoseNext("PutItem", 1, faultproxy.Stall)
	go func() {
		p.WaitStalled(t, "PutItem", 1)
		cancel()
	}()
	if err := s.Put(ctx, store.Item{store.PK: "k", "v": int64(1)}, store.IfAbsent()); !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled put: %v, want canceled", err)
	}
	if _, err := s.Get(context.Background(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("item after the stalled put: %v, want not found", err)
	}
	if p.Stalled("PutItem") != 1 || p.Lost("PutItem") != 0 {
		t.Fatalf("stalled %d, lost %d PutItem; want 1, 0", p.Stalled("PutItem"), p.Lost("PutItem"))
	}
}

// A server error is answered after the server applied the request; a held
// request reaches the server only once released.
func TestServerErrorIsAppliedAndHoldWaitsForRelease(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL()) // one attempt: the 500 is the answer
	ctx := context.Background()
	p.LoseNext("PutItem", 1, faultproxy.ServerError)
	if err := s.Put(ctx, store.Item{store.PK: "k", "v": int64(1)}, store.IfAbsent()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("put answered 500: %v, want unavailable", err)
	}
	if _, err := s.Get(ctx, "k"); err != nil || p.Lost("PutItem") != 1 {
		t.Fatalf("item after the 500: %v (lost %d), want it applied and the answer lost", err, p.Lost("PutItem"))
	}
	p.LoseNext("PutItem", 1, faultproxy.Hold)
	done := make(chan error, 1)
	go func() { done <- s.Put(ctx, store.Item{store.PK: "h", "v": int64(1)}, store.IfAbsent()) }()
	p.WaitHeld(t, "PutItem", 1)
	if _, err := s.Get(ctx, "h"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a held put reached the server: %v", err)
	}
	p.Release()
	if err := <-done; err != nil {
		t.Fatalf("released put: %v", err)
	}
	if _, err := s.Get(ctx, "h"); err != nil {
		t.Fatalf("item after the release: %v", err)
	}
}
