package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
)

// batchSignal is a store whose first BatchGet closes started.
type batchSignal struct {
	counted
	started chan struct{}
	once    atomic.Bool
}

func (b *batchSignal) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	if b.once.CompareAndSwap(false, true) {
		close(b.started)
	}
	return b.counted.BatchGet(ctx, pks)
}

func ptr(v int64) *int64 { return &v }

type failingAudit struct{}

func (failingAudit) Append(context.Context, audit.Entry) (audit.Record, error) {
	return audit.Record{}, fmt.Errorf("%w: audit table throttled", audit.ErrAuditWrite)
}

func (failingAudit) Stage(context.Context, audit.Entry, string, int) (audit.Record, store.Op, error) {
	return audit.Record{}, store.Op{}, fmt.Errorf("%w: the record cannot be built", audit.ErrAuditWrite)
}

func TestForceAllConflictOnOneOfFourWritesNone(t *testing.T) {
	t.Parallel()
	for name, base := range map[string]store.Store{"sqlite": openStore(t), "dynamo": dynamotest.NewStore(t, endpoint)} {
		t.Run(name, func(t *testing.T) {
			clk := clocktest.NewFake(t0)
			ov := newLevers(base, clk)
			log := audit.NewLog(base, clk, "ctx")
			if _, err := ov.Force(t.Context(), forceReq{Dependency: "core-api", Reason: "held", Actor: "bob", For: time.Hour}); err != nil {
				t.Fatal(err)
			}
			_, err := ov.WithLog(log).Change(t.Context(), forceAll("alice", "a1", "a2", "core-api", "a3"))
			var ce *breaker.ConflictError
			if !errors.As(err, &ce) || ce.Current.Actor != "bob" {
				t.Fatalf("ForceAll with one held override: %v; want a conflict naming bob", err)
			}
			for _, d := range []string{"a1", "a2", "a3"} {
				if _, err := ov.Get(t.Context(), d); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s was written despite the conflict: %v", d, err)
				}
			}
			if l, _ := log.List(t.Context(), audit.Query{Actor: "alice"}); len(l.Records) != 0 {
				t.Errorf("%d audit records written despite the conflict", len(l.Records))
			}
		})
	}
}

func TestForceAllReadsOnceWhileTheActorResolves(t *testing.T) {
	t.Parallel()
	base := &batchSignal{counted: counted{Store: dynamotest.NewStore(t, endpoint)}, started: make(chan struct{})}
	clk := clocktest.NewFake(t0)
	ov := newLevers(base, clk)
	log := audit.NewLog(base, clk, "ctx")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The actor answers only once the batch read has started: resolving it
	// before the read would deadlock until the timeout.
	actor := func(ctx context.Context) (string, error) {
		select {
		case <-base.started:
			return "alice", nil
		case <-ctx.Done():
			return "", errors.New("the batch read did not start while the actor was resolving")
		}
	}
	deps := []string{"d01", "d02", "d03", "d04", "d05", "d06", "d07", "d08", "d09", "d10", "d11", "d12", "d13", "d14", "d15", "d16"}
	var confirmed []lever.Plan
	rep, err := lever.Do(ctx, ov.WithLog(log).svc().WithActor(actor), forceAll("", deps...), func(p *lever.Planned) error { confirmed = p.Plans; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if base.batchKeys.Load() != int64(len(deps)) || base.scans.Load() != 0 || len(confirmed) != len(deps) {
		t.Errorf("read %d keys by batch, %d scans, confirmed %d; want %d keys in one batch", base.batchKeys.Load(), base.scans.Load(), len(confirmed), len(deps))
	}
	for i, o := range rep.Outcomes {
		if breaker.ForceResultOf(o).After.Dependency != deps[i] || !o.Written || o.Record.ID == "" || breaker.ForceResultOf(o).After.Actor != "alice" {
			t.Errorf("outcome %d = %+v; want %s written by alice and audited, in request order", i, o, deps[i])
		}
	}
	listing, _ := log.List(t.Context(), audit.Query{})
	recs := listing.Records
	if len(recs) != len(deps) {
		t.Errorf("%d audit records, want %d", len(recs), len(deps))
	}
}

// A change whose record cannot be built is not written at all: there is
// no override without its record.
func TestForceAllWithoutItsRecordWritesNothing(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ov := newLevers(s, clocktest.NewFake(t0))
	rep, err := ov.WithLog(failingAudit{}).Change(t.Context(), forceAll("al", "a1", "a2"))
	if !errors.Is(err, lever.ErrNotWritten) || errors.Is(err, audit.ErrAuditWrite) {
		t.Fatalf("ForceAll with a failing audit: %v; want not written (never an audit failure of a change made)", err)
	}
	for _, o := range rep.Outcomes {
		if o.Written || !errors.Is(o.Err, lever.ErrNotWritten) {
			t.Errorf("outcome %+v: want not written", o)
		}
	}
	if list, _ := ov.List(t.Context()); len(list) != 0 {
		t.Errorf("overrides written without their records: %s", deps(list))
	}
}

func TestForceSeenVersion(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ov := newLevers(s, clocktest.NewFake(t0))
	first, err := ov.Force(t.Context(), forceReq{Dependency: "openai", Reason: "r", Actor: "bob", For: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ov.Force(t.Context(), forceReq{Dependency: "openai", Reason: "r", Actor: "al", For: time.Hour, SeenVersion: ptr(first.After.Version + 1)})
	var ce *breaker.ConflictError
	if !errors.As(err, &ce) || !ce.Raced {
		t.Fatalf("a version the caller did not see: %v; want a raced conflict", err)
	}
	res, err := ov.Force(t.Context(), forceReq{Dependency: "openai", Reason: "r", Actor: "al", For: time.Hour, SeenVersion: ptr(first.After.Version)})
	if err != nil || !res.Replaced || res.After.Version != 2 {
		t.Fatalf("replacing the version seen: %+v, %v", res, err)
	}
}

func TestClearAll(t *testing.T) {
	t.Parallel()
	s := &counted{Store: dynamotest.NewStore(t, endpoint)}
	clk := clocktest.NewFake(t0)
	ov := newLevers(s, clk)
	log := audit.NewLog(s, clk, "ctx")
	if _, err := ov.WithLog(log).Change(t.Context(), forceAll("al", "a1", "a3")); err != nil {
		t.Fatal(err)
	}
	before := s.batchKeys.Load()
	c := breaker.Clear("done", "a1", "a2", "a3")
	c.Actor = "al"
	rep, err := ov.WithLog(log).Change(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	outs := rep.Outcomes
	if s.batchKeys.Load()-before != 3 {
		t.Errorf("ClearAll read %d keys by batch, want 3", s.batchKeys.Load()-before)
	}
	if !outs[0].Written || outs[1].Written || breaker.ClearResultOf(outs[1]).Before != nil || !outs[2].Written {
		t.Errorf("outcomes %+v: want a1 and a3 cleared, a2 already clear", outs)
	}
	if list, _, _ := ov.ListForWith(t.Context(), []string{"a1", "a2", "a3"}, nil); len(list) != 0 {
		t.Errorf("left after ClearAll: %s", deps(list))
	}
	listing, _ := log.List(t.Context(), audit.Query{Action: breaker.ActionClear})
	recs := listing.Records
	if len(recs) != 2 {
		t.Errorf("%d clear records, want 2", len(recs))
	}
}

// TestClearAllAppliesTheKnownRule: a typo of a known name with no stored
// override is refused before anything is written or confirmed; an unknown
// name whose override is stored is cleared (it names what exists).
func TestClearAllAppliesTheKnownRule(t *testing.T) {
	t.Parallel()
	base := openStore(t)
	clk := clocktest.NewFake(t0)
	ov := newLevers(base, clk)
	log := audit.NewLog(base, clk, "ctx")
	if _, err := ov.WithLog(log).Change(t.Context(), forceAll("al", "openai", "legacy-svc")); err != nil {
		t.Fatal(err)
	}
	known := []string{"openai", "postgres"}
	confirmed := false
	clear := func(known []string, deps ...string) lever.Change {
		c := breaker.Clear("done", deps...)
		c.Actor, c.Known = "al", known
		return c
	}
	_, err := lever.Do(t.Context(), ov.WithLog(log).svc(), clear(known, "openai", "open-ai"), func(*lever.Planned) error { confirmed = true; return nil })
	var unknown *breaker.UnknownDependencyError
	if !errors.As(err, &unknown) || unknown.Name != "open-ai" || unknown.Suggestion != "openai" {
		t.Fatalf("clearing the typo open-ai: %v, want an unknown-dependency error suggesting openai", err)
	}
	if confirmed {
		t.Error("a refused clear asked for confirmation")
	}
	if list, _ := ov.List(t.Context()); len(list) != 2 {
		t.Errorf("a refused clear deleted an override: %s left", deps(list))
	}
	rep, err := ov.WithLog(log).Change(t.Context(), clear(known, "legacy-svc"))
	if err != nil || len(rep.Outcomes) != 1 || !rep.Outcomes[0].Written {
		t.Fatalf("clearing an unknown name whose override is stored: %+v, %v", rep, err)
	}
	if _, err := ov.WithLog(log).Change(t.Context(), clear(nil, "open-ai")); err != nil {
		t.Errorf("without Known the rule does not apply: %v", err)
	}
}
