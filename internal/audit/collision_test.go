package audit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// A record is never written over another item: an item planted under the
// pk a change's record takes refuses the whole change (the lever write
// with it), on both backends, and the planted item is left as it was.
func TestARecordNeverOverwritesAnItem(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		_, _, s := openLog(t)
		testRecordCollision(t, s)
	})
	t.Run("dynamodb", func(t *testing.T) {
		testRecordCollision(t, dynamotest.NewStore(t, moto.Start(t)))
	})
}

func testRecordCollision(t *testing.T, s store.Store) {
	ctx := context.Background()
	log := audit.NewLog(s, clocktest.NewFake(t0), "ctx")
	token, _ := store.NewWriteID()
	rec, op, err := log.Stage(ctx, audit.Entry{Actor: "alice", Action: "breaker.clear", Subject: "breaker#openai", Reason: "mine"}, token, 0)
	if err != nil {
		t.Fatal(err)
	}
	planted := store.Item{store.PK: op.PK(), "actor": "mallory"}
	if err := s.Put(ctx, planted, store.Always()); err != nil {
		t.Fatal(err)
	}
	lever := store.Item{store.PK: "breaker#openai", store.WriteIDAttr: token}
	c := store.Change{Token: token, Proof: op.PK(), Ops: []store.Op{store.PutOp(lever, store.IfAbsent()), op}}
	_, err = store.Apply(ctx, s, c)
	var tce *store.TxConflictError
	if !errors.As(err, &tce) {
		t.Fatalf("change whose record pk %s is taken: %v, want a conflict", rec.ID, err)
	}
	if _, ok := tce.On(op.PK()); !ok {
		t.Errorf("conflict %v does not name the record's pk", tce.Conflicts)
	}
	if got, err := s.Get(ctx, op.PK()); err != nil || got.Str("actor") != "mallory" {
		t.Errorf("the planted item became %v, %v", got, err)
	}
	if _, err := s.Get(ctx, "breaker#openai"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the lever was written without its record: %v", err)
	}
}

// An append whose answer is lost after the store applied it (one attempt:
// the connection is reset after the transaction) is settled by reading its
// record, which carries the append's token: one record, no error.
func TestAppendWhoseAnswerIsLostIsConfirmedByARead(t *testing.T) {
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL()) // one attempt per request
	ctx := context.Background()
	log := audit.NewLog(s, clocktest.NewFake(t0), "ctx")
	p.LoseNext("TransactWriteItems", 1, faultproxy.Reset)
	rec, err := log.Append(ctx, audit.Entry{Actor: "alice", Action: "chaos.sign", Subject: "chaos#j1", Reason: "lost",
		Before: map[string]any{"state": "forced_open"}})
	if err != nil || rec.ID == "" {
		t.Fatalf("append with its answer lost: %+v, %v; want the record, no error", rec, err)
	}
	if p.Lost("TransactWriteItems") != 1 {
		t.Fatalf("the proxy lost %d TransactWriteItems answers, want 1", p.Lost("TransactWriteItems"))
	}
	l, err := log.List(ctx, audit.Query{Scan: true})
	if err != nil || len(l.Records) != 1 || l.Records[0].ID != rec.ID || l.Records[0].Change == "" {
		t.Fatalf("List = %+v, %v; want the one record %s, with its change token", l.Records, err, rec.ID)
	}
}
