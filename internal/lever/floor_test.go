package lever_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/store"
)

// counting is a store that counts its reads and keeps the transactions
// sent to it.
type counting struct {
	store.Store
	mu    sync.Mutex
	reads int
	sent  []store.Change
}

func (c *counting) Get(ctx context.Context, pk string) (store.Item, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.Store.Get(ctx, pk)
}

func (c *counting) Transact(ctx context.Context, ch store.Change) error {
	c.mu.Lock()
	c.sent = append(c.sent, ch)
	c.mu.Unlock()
	return c.Store.Transact(ctx, ch)
}

func atOnce(c lever.Change) lever.Change {
	c.AtOnce = true
	return c
}

func floorService(t *testing.T) (*lever.Service, *counting, *audit.Log) {
	t.Helper()
	svc, m, log := newService(t, 0)
	c := &counting{Store: m.Store}
	return lever.NewService(c, nil, svc.Kinds()).WithLog(log).WithActor(func(context.Context) (string, error) { return "al", nil }), c, log
}

// A change whose every target's write from absent is conditional on its
// absence reads nothing: one transaction holds the writes, their records
// and a check that each extra key the caller asked for (a policy) is
// absent; the plan says so (no extra item).
func TestAChangeAtTheFloorIsOneTransaction(t *testing.T) {
	svc, st, log := floorService(t)
	ctx := context.Background()
	p, err := svc.Plan(ctx, atOnce(set("drill", "a", "b")), "policy#table")
	if err != nil {
		t.Fatal(err)
	}
	if st.reads != 0 || len(p.Extra) != 0 || p.Writes() != 2 {
		t.Fatalf("planned with %d reads, extra %v, %d writes; want no read, nothing extra, 2 writes", st.reads, p.Extra, p.Writes())
	}
	rep, err := svc.Commit(ctx, p)
	if err != nil || len(rep.Written()) != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
	if st.reads != 0 || len(st.sent) != 1 {
		t.Fatalf("%d reads and %d transactions, want 0 and 1", st.reads, len(st.sent))
	}
	var puts, checks int
	for _, op := range st.sent[0].Ops {
		switch {
		case op.IsCheck():
			checks++
			if op.Check != "policy#table" || !op.Cond.RequiresAbsent() {
				t.Errorf("check %s %v, want policy#table absent", op.Check, op.Cond)
			}
		case op.Put != nil && op.Put.Str("value") == "on":
			puts++
			if !op.Cond.RequiresAbsent() {
				t.Errorf("%s written %v, want only if absent", op.PK(), op.Cond)
			}
		}
	}
	if puts != 2 || checks != 1 || len(st.sent[0].Ops) != 5 {
		t.Errorf("transaction of %d ops (%d flags, %d checks), want 2 flags, 2 records, 1 check", len(st.sent[0].Ops), puts, checks)
	}
	if l, _ := log.List(ctx, audit.Query{Action: "flag.set"}); len(l.Records) != 2 {
		t.Errorf("%d records, want 2", len(l.Records))
	}
}

// A target that is there is decided on it as the refusal showed it,
// unread: a flag already set is left as it is, nothing recorded; a change
// shown before its commit (a prompt), or a dry run, is read first as
// always.
func TestAFloorRefusalIsTheRead(t *testing.T) {
	svc, st, log := floorService(t)
	ctx := context.Background()
	if _, err := svc.Change(ctx, set("first", "a")); err != nil {
		t.Fatal(err)
	}
	st.reads, st.sent = 0, nil
	rep, err := svc.Change(ctx, set("again", "a", "b"))
	if err != nil || !rep.Outcomes[0].Noop || !rep.Outcomes[1].Written {
		t.Fatalf("%+v %v; want a as it was, b written", rep.Outcomes, err)
	}
	if st.reads != 0 || len(st.sent) != 2 {
		t.Errorf("%d reads and %d transactions, want none and 2 (the refused one, then b's)", st.reads, len(st.sent))
	}
	if l, _ := log.List(ctx, audit.Query{Action: "flag.set"}); len(l.Records) != 2 {
		t.Errorf("%d records, want a's first and b's", len(l.Records))
	}
	st.reads, st.sent = 0, nil
	shown := set("shown", "d")
	if _, err := lever.Do(ctx, svc, shown, func(*lever.Planned) error { return nil }); err != nil || st.reads != 1 {
		t.Errorf("a change shown before its commit: %v, %d reads; want its item read", err, st.reads)
	}
	st.reads, st.sent = 0, nil
	dry := set("look", "c")
	dry.DryRun = true
	if _, err := svc.Change(ctx, dry); err != nil || st.reads != 1 {
		t.Errorf("a dry run: %v, %d reads; want its item read", err, st.reads)
	}
}

// An extra key that is there stops the change whole, nothing written: its
// *AssumedError holds what the refusal showed, and planning the change
// again with it reads nothing, decides on the item seen, and keeps
// checking what was seen absent.
func TestAnExtraKeyThereStopsTheChange(t *testing.T) {
	svc, st, _ := floorService(t)
	ctx := context.Background()
	if err := st.Put(ctx, store.Item{store.PK: "policy#table", "text": "hold"}, store.Always()); err != nil {
		t.Fatal(err)
	}
	p, err := svc.Plan(ctx, atOnce(set("drill", "a")), "policy#table", "other#x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Commit(ctx, p)
	var ae *lever.AssumedError
	if !errors.As(err, &ae) || !errors.Is(err, lever.ErrConflict) || len(ae.Keys) != 1 || ae.Keys[0] != "policy#table" {
		t.Fatalf("%v; want an AssumedError naming policy#table", err)
	}
	if _, err := st.Store.Get(ctx, "flag#a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("written: %v", err)
	}
	seen := ae.Change.Seen
	if seen["policy#table"].Str("text") != "hold" || seen["flag#a"] != nil || seen["other#x"] != nil {
		t.Fatalf("seen %v: want the policy, a and other#x absent", seen)
	}
	st.reads, st.sent = 0, nil
	q, err := svc.Plan(ctx, ae.Change, ae.Extra...)
	if err != nil || st.reads != 0 || q.Extra["policy#table"].Str("text") != "hold" {
		t.Fatalf("planned again: %v, %d reads, extra %v; want the policy seen, nothing read", err, st.reads, q.Extra)
	}
	if _, err := svc.Commit(ctx, q); err != nil {
		t.Fatal(err)
	}
	var checked []string
	for _, op := range st.sent[0].Ops {
		if op.IsCheck() {
			checked = append(checked, op.Check)
		}
	}
	if len(checked) != 1 || checked[0] != "other#x" {
		t.Errorf("checked %v, want other#x (seen absent) alone", checked)
	}
}

// losing loses the answer of its next lose transactions: each is sent on
// and applied (or refused), and the caller hears only that the store did
// not answer.
type losing struct {
	*counting
	lose int
}

func (l *losing) Transact(ctx context.Context, ch store.Change) error {
	err := l.counting.Transact(ctx, ch)
	if l.lose > 0 {
		l.lose--
		return fmt.Errorf("%w: connection reset by peer (the answer to %v was lost)", store.ErrUnavailable, err)
	}
	return err
}

// A change at the floor whose answer is lost, and which the read of its
// proof shows did not land (a target there refused it unheard), is
// decided again on the targets as read, as a read's plan decides them,
// and sent again: not reported as a store that could not be reached.
func TestAFloorChangeWhoseRefusalWasLostIsDecidedOnARead(t *testing.T) {
	svc, st, log := floorService(t)
	ctx := context.Background()
	if _, err := svc.Change(ctx, set("first", "a")); err != nil {
		t.Fatal(err)
	}
	ls := &losing{counting: st, lose: 1}
	lossy := lever.NewService(ls, nil, svc.Kinds()).WithLog(log).WithActor(func(context.Context) (string, error) { return "al", nil })
	st.sent = nil
	rep, err := lossy.Change(ctx, set("again", "a", "b"))
	if err != nil || !rep.Outcomes[0].Noop || !rep.Outcomes[1].Written {
		t.Fatalf("%+v %v; want a as it was, b written", rep.Outcomes, err)
	}
	if len(st.sent) != 2 {
		t.Errorf("%d transactions, want 2 (the refused one, unheard, then b's)", len(st.sent))
	}
	if l, _ := log.List(ctx, audit.Query{Action: "flag.set"}); len(l.Records) != 2 {
		t.Errorf("%d records, want a's first and b's", len(l.Records))
	}
}
