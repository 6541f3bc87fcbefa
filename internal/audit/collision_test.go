package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// Issue 21: a second append under the same pk (same time, same id) is an
// error, never an overwrite, on both backends; the first record is intact.
func TestAppendNeverOverwritesARecord(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		_, _, s := openLog(t)
		testAppendCollision(t, s)
	})
	t.Run("dynamodb", func(t *testing.T) {
		testAppendCollision(t, dynamotest.NewStore(t, moto.Start(t)))
	})
}

func testAppendCollision(t *testing.T, s store.Store) {
	ctx := context.Background()
	log := audit.WithIDs(audit.NewLog(s, clock.NewFake(t0), "ctx"), func() (string, error) { return "00000000000000aa", nil })
	first, err := log.Append(ctx, audit.Entry{Actor: "alice", Action: "breaker.clear", Subject: "breaker#openai", Reason: "first"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = log.Append(ctx, audit.Entry{Actor: "mallory", Action: "breaker.force-open", Subject: "breaker#openai", Reason: "rewritten"})
	if !errors.Is(err, audit.ErrAuditWrite) || !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second append with the same id: %v, want ErrAuditWrite and ErrConditionFailed, \"already exists\"", err)
	}
	l, err := log.List(ctx, audit.Query{Scan: true})
	if err != nil || len(l.Records) != 1 {
		t.Fatalf("List = %+v, %v", l, err)
	}
	if r := l.Records[0]; r.ID != first.ID || r.Actor != "alice" || r.Reason != "first" || r.Action != "breaker.clear" {
		t.Errorf("the first record was changed: %+v", r)
	}
}

// Issue 21 (probe): an append whose answer is lost after the store applied
// it (one attempt: the send fails) is resolved by re-reading the record's
// pk: the record found is this one, so the append succeeded, exactly once.
// A record under the same pk with other content stays a collision (above).
func TestAppendWhoseAnswerIsLostIsConfirmedByARead(t *testing.T) {
	p := faultproxy.Start(t, moto.Start(t))
	s := dynamotest.NewStore(t, p.URL()) // one attempt per request
	ctx := context.Background()
	log := audit.NewLog(s, clock.NewFake(t0), "ctx")
	p.LoseNext("PutItem", 1, faultproxy.Reset)
	rec, err := log.Append(ctx, audit.Entry{Actor: "alice", Action: "breaker.clear", Subject: "breaker#openai", Reason: "lost",
		Before: map[string]any{"state": "forced_open"}})
	if err != nil || rec.ID == "" {
		t.Fatalf("append with its answer lost: %+v, %v; want the record, no error", rec, err)
	}
	if p.Lost("PutItem") != 1 {
		t.Fatalf("the proxy lost %d PutItem answers, want 1", p.Lost("PutItem"))
	}
	l, err := log.List(ctx, audit.Query{Scan: true})
	if err != nil || len(l.Records) != 1 || l.Records[0].ID != rec.ID {
		t.Fatalf("List = %+v, %v; want the one record %s", l.Records, err, rec.ID)
	}
}
