package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// denyPuts refuses, as IAM does (a definitive answer: nothing written),
// every put whose pk starts with prefix.
type denyPuts struct {
	store.Store
	prefix string
}

func (d denyPuts) Put(ctx context.Context, it store.Item, c store.Condition) error {
	if strings.HasPrefix(it.PK(), d.prefix) {
		return store.ErrCredentials
	}
	return d.Store.Put(ctx, it, c)
}

// A claimed append whose claim the store refused outright stores nothing
// `audit repair` could write the record from: its error says so
// (ErrClaimNotStored, so the change's UnwrittenError is not Repairable).
// One whose claim landed and whose record did not is repairable.
func TestAppendSaysWhetherItsClaimWasStored(t *testing.T) {
	_, _, s := openLog(t)
	e := audit.Entry{Actor: "a", Action: "breaker.clear", Subject: "breaker#openai", Once: "0123456789abcdef0123456789abcdef"}

	_, err := audit.NewLog(denyPuts{s, audit.Prefix}, clock.NewFake(t0), "ctx").Append(context.Background(), e)
	if !errors.Is(err, audit.ErrAuditWrite) || !errors.Is(err, audit.ErrClaimNotStored) {
		t.Fatalf("claim denied: err = %v, want ErrAuditWrite and ErrClaimNotStored", err)
	}
	if (&audit.UnwrittenError{Subject: e.Subject, WriteID: e.Once, Err: err}).Repairable() {
		t.Error("claim denied: Repairable, want not (nothing stored to repair from)")
	}
	if _, gerr := s.Get(context.Background(), audit.ClaimKey(e.Once)); !errors.Is(gerr, store.ErrNotFound) {
		t.Fatalf("claim stored after a denied put: %v", gerr)
	}

	// Claims pass, records are denied: the claim holds the record.
	e.Once = "fedcba9876543210fedcba9876543210"
	_, err = audit.NewLog(denyRecords{s}, clock.NewFake(t0), "ctx").Append(context.Background(), e)
	if !errors.Is(err, audit.ErrAuditWrite) || errors.Is(err, audit.ErrClaimNotStored) {
		t.Fatalf("record denied: err = %v, want ErrAuditWrite without ErrClaimNotStored", err)
	}
	if !(&audit.UnwrittenError{Subject: e.Subject, WriteID: e.Once, Err: err}).Repairable() {
		t.Error("record denied, claim stored: not Repairable, want repairable from the claim")
	}
}

// denyRecords refuses puts of audit records, not of claims.
type denyRecords struct{ store.Store }

func (d denyRecords) Put(ctx context.Context, it store.Item, c store.Condition) error {
	if strings.HasPrefix(it.PK(), audit.Prefix) && !strings.HasPrefix(it.PK(), audit.ClaimPrefix) {
		return store.ErrCredentials
	}
	return d.Store.Put(ctx, it, c)
}

// retriedIntoItself is a put whose first answer was lost: the store applies
// it and answers the client's retry ConditionalCheckFailed, and the store then
// goes away, so the re-read fails too.
type retriedIntoItself struct{ store.Store }

func (r retriedIntoItself) Put(ctx context.Context, it store.Item, c store.Condition) error {
	if err := r.Store.Put(ctx, it, c); err != nil {
		return err
	}
	return store.ErrConditionFailed
}

func (retriedIntoItself) Get(context.Context, string) (store.Item, error) {
	return nil, store.ErrUnavailable
}

// An append refused as "already there" whose re-read failed is not reported
// as a collision with another record: its own lost first attempt is as
// likely, so the outcome is unknown (ErrAuditUnknown, exit 8 "may not have
// been written", and where to look).
func TestAppendRefusedAndUnreadableIsUnknownNotACollision(t *testing.T) {
	_, _, s := openLog(t)
	_, err := audit.NewLog(retriedIntoItself{s}, clock.NewFake(t0), "ctx").Append(context.Background(),
		audit.Entry{Actor: "a", Action: "breaker.clear", Subject: "breaker#openai", Reason: "r"})
	if !errors.Is(err, audit.ErrAuditUnknown) || !errors.Is(err, audit.ErrAuditWrite) {
		t.Fatalf("err = %v, want ErrAuditUnknown", err)
	}
	if msg := err.Error(); strings.Contains(msg, "already exists") || !strings.Contains(msg, "koshactl audit list --subject breaker#openai") {
		t.Errorf("err = %q: want no collision claimed, and where to look", msg)
	}
}
