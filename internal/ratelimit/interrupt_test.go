package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// interruptFixture is a store behind a fault proxy (one attempt per request),
// buckets and an audit log on it, and alice's bucket drained.
func interruptFixture(t *testing.T) (*faultproxy.Proxy, store.Store, buckets, *audit.Log) {
	t.Helper()
	p := faultproxy.Start(t, motoURL(t))
	s := dynamotest.NewStore(t, p.URL())
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	b := newBuckets(t, s, clk)
	log := audit.NewLog(s, clk, "test")
	if _, _, err := b.WithLog(log).ApplyAudited(context.Background(), "me", "", ratelimit.Change{Op: ratelimit.OpDrain, Client: "alice"}); err != nil {
		t.Fatal(err)
	}
	return p, s, b, log
}

const transact = "TransactWriteItems"

// resetInterrupted resets alice while the next TransactWriteItems is hit by
// fault, and cancels the context once the proxy holds it.
func resetInterrupted(t *testing.T, p *faultproxy.Proxy, b buckets, log *audit.Log, fault faultproxy.Fault) (applied, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.LoseNext(transact, 1, fault)
	go func() {
		if fault == faultproxy.Stall {
			p.WaitStalled(t, transact, p.Stalled(transact)+1)
		} else {
			p.WaitLost(t, transact, p.Lost(transact)+1)
		}
		cancel()
	}()
	res, _, err := b.WithLog(log).ApplyAudited(ctx, "me", "incident", ratelimit.Change{Op: ratelimit.OpReset, Client: "alice"})
	return res, err
}

// An interrupt while the reset's change is in flight, whether the store
// applied it (its answer held) or never saw it (the request stalled): the
// change is re-issued under its token on a context of its own, so the reset
// is reported confirmed, the bucket and its one record written together.
func TestResetInterruptedIsSettledWithItsRecord(t *testing.T) {
	t.Parallel()
	for _, fault := range []faultproxy.Fault{faultproxy.Withhold, faultproxy.Stall} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			p, s, b, log := interruptFixture(t)
			res, err := resetInterrupted(t, p, b, log, fault)
			if err != nil || !res.Confirmed {
				t.Fatalf("reset interrupted in flight: confirmed %v, err %v; want confirmed", res.Confirmed, err)
			}
			if it, err := s.Get(context.Background(), "rl#alice"); err != nil || it.WriteID() != res.WriteID {
				t.Fatalf("stored bucket %v, %v; want the interrupted change's", it, err)
			}
			var resets []audit.Record
			for _, r := range records(t, log, "rl#alice") {
				if r.Action == ratelimit.ActionReset {
					resets = append(resets, r)
				}
			}
			if len(resets) != 1 || resets[0].Change != res.WriteID || resets[0].Actor != "me" || resets[0].Reason != "incident" {
				t.Fatalf("reset records %+v, want exactly one, of change %s", resets, res.WriteID)
			}
		})
	}
}

// An interrupt in flight whose re-issue and settling read both fail: the
// outcome is unknown, said so (never "canceled", never a change without
// its record).
func TestResetInterruptedWithTheStoreUnreachableIsUnknown(t *testing.T) {
	t.Parallel()
	p, _, b, log := interruptFixture(t)
	p.LoseNext(transact, 2, faultproxy.Reset)  // the re-issue
	p.LoseNext("GetItem", 1, faultproxy.Reset) // the settling read (the apply's own is a batch read)
	res, err := resetInterrupted(t, p, b, log, faultproxy.Withhold)
	if res.Confirmed || !errors.Is(err, store.ErrOutcomeUnknown) || errors.Is(err, audit.ErrAuditWrite) || errors.Is(err, context.Canceled) {
		t.Fatalf("reset interrupted, store unreachable: confirmed %v, err %v; want the outcome unknown", res.Confirmed, err)
	}
	if p.Lost("GetItem") != 1 {
		t.Fatalf("lost %d GetItem answers, want 1 (the settling read)", p.Lost("GetItem"))
	}
}
