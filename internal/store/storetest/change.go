package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

// token returns a fresh change token.
func token(t *testing.T) string {
	t.Helper()
	id, err := store.NewWriteID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// leverChange is the shape of every lever change: the lever item written
// under cond, and its record, which must not exist yet and proves the
// change.
func leverChange(t *testing.T, lever string, cond store.Condition, record string) store.Change {
	t.Helper()
	tok := token(t)
	return store.Change{Token: tok, Proof: record, Ops: []store.Op{
		store.PutOp(store.Item{store.PK: lever, "v": "after", store.WriteIDAttr: tok}, cond),
		store.PutOp(store.Item{store.PK: record, "of": lever, store.WriteIDAttr: tok}, store.IfAbsent()),
	}}
}

func testChangeAllOrNothing(t *testing.T, s store.Store) {
	mustPut(t, s, store.Item{store.PK: "lever#a", "v": "before", "version": int64(1)})
	// The record's key is taken: the lever write must not land either.
	mustPut(t, s, store.Item{store.PK: "audit#taken", "v": "someone else's"})
	c := leverChange(t, "lever#a", store.IfEquals("version", int64(1)), "audit#taken")
	_, err := store.Apply(ctx(t), s, c)
	var tce *store.TxConflictError
	if !errors.As(err, &tce) || !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("Apply with a taken record key: got %v, want a *TxConflictError", err)
	}
	if got := mustGet(t, s, "lever#a").Str("v"); got != "before" {
		t.Errorf("lever after a refused change: v = %q, want it untouched (before)", got)
	}
	if got := mustGet(t, s, "audit#taken").Str("v"); got != "someone else's" {
		t.Errorf("record after a refused change: v = %q, want it untouched", got)
	}

	c = leverChange(t, "lever#a", store.IfEquals("version", int64(1)), "audit#free")
	c.Ops = append(c.Ops, store.DeleteOp("lever#gone", store.IfAbsent()))
	if res, err := store.Apply(ctx(t), s, c); err != nil || res.Confirmed {
		t.Fatalf("Apply: %+v, %v; want applied, not confirmed", res, err)
	}
	if got := mustGet(t, s, "lever#a"); got.WriteID() != c.Token {
		t.Errorf("lever write_id = %q, want the change's token", got.WriteID())
	}
	if got := mustGet(t, s, "audit#free"); got.Str("of") != "lever#a" {
		t.Errorf("record = %v, want it written with the lever", got)
	}
}

func testChangeConflicts(t *testing.T, s store.Store) {
	mustPut(t, s, store.Item{store.PK: "lever#b", "version": int64(2)})
	c := store.Change{Token: token(t), Proof: "lever#c"}
	c.Ops = []store.Op{
		store.PutOp(store.Item{store.PK: "lever#b", store.WriteIDAttr: c.Token}, store.IfEquals("version", int64(1))),
		store.PutOp(store.Item{store.PK: "lever#c", store.WriteIDAttr: c.Token}, store.IfAbsent()),
		store.DeleteOp("lever#d", store.IfPresent()),
	}
	_, err := store.Apply(ctx(t), s, c)
	var tce *store.TxConflictError
	if !errors.As(err, &tce) {
		t.Fatalf("got %v, want *TxConflictError", err)
	}
	b, ok := tce.On("lever#b")
	if !ok || b.Current == nil || !store.Equal(b.Current["version"], int64(2)) {
		t.Errorf("conflict on lever#b: %+v (found %v), want it with the stored item", b, ok)
	}
	if _, ok := tce.On("lever#d"); !ok {
		t.Errorf("conflicts %+v: want lever#d's refused delete named too", tce.Conflicts)
	}
	if _, ok := tce.On("lever#c"); ok {
		t.Errorf("conflicts %+v: lever#c's condition held, it must not be named", tce.Conflicts)
	}
	if got := state(t, s, "lever#c"); got != nil {
		t.Errorf("lever#c = %v after a refused change, want absent", got)
	}
}

// A change may hold checks: items it writes nothing to whose conditions
// must hold (an approval checks the proofs it counts). A check that fails
// refuses the whole change, named with the item as stored; one that holds
// writes nothing to its item.
func testChangeChecks(t *testing.T, s store.Store) {
	mustPut(t, s, store.Item{store.PK: "proof#g", "binding": "h1"})
	c := leverChange(t, "lever#g", store.IfAbsent(), "audit#g")
	c.Ops = append(c.Ops, store.CheckOp("proof#g", store.IfEquals("binding", "h2")), store.CheckOp("closed#g", store.IfAbsent()))
	_, err := store.Apply(ctx(t), s, c)
	var tce *store.TxConflictError
	if !errors.As(err, &tce) {
		t.Fatalf("a change whose check fails: got %v, want *TxConflictError", err)
	}
	if ce, ok := tce.On("proof#g"); !ok || ce.Current == nil || ce.Current.Str("binding") != "h1" || len(tce.Conflicts) != 1 {
		t.Errorf("conflicts %+v: want the failed check of proof#g alone, with the item as stored", tce.Conflicts)
	}
	if state(t, s, "lever#g") != nil || state(t, s, "audit#g") != nil {
		t.Error("a change whose check failed wrote its items")
	}
	c = leverChange(t, "lever#g", store.IfAbsent(), "audit#g")
	c.Ops = append(c.Ops, store.CheckOp("proof#g", store.IfEquals("binding", "h1")), store.CheckOp("closed#g", store.IfAbsent()))
	if _, err := store.Apply(ctx(t), s, c); err != nil {
		t.Fatalf("a change whose checks hold: %v", err)
	}
	if got := mustGet(t, s, "proof#g"); got.Str("binding") != "h1" || got.WriteID() != "" {
		t.Errorf("a checked item was written: %v", got)
	}
	if state(t, s, "closed#g") != nil {
		t.Error("a check of an absent item created it")
	}
	if got := mustGet(t, s, "lever#g"); got.WriteID() != c.Token {
		t.Errorf("lever after the change = %v, want it written", got)
	}
	bad := store.Change{Token: token(t), Proof: "lever#h"}
	bad.Ops = []store.Op{store.PutOp(store.Item{store.PK: "lever#h", store.WriteIDAttr: bad.Token}, store.IfAbsent()), store.CheckOp("proof#g", store.Always())}
	if _, err := store.Apply(ctx(t), s, bad); !errors.Is(err, store.ErrInvalidItem) {
		t.Errorf("a check without a condition: %v, want ErrInvalidItem", err)
	}
}

func testChangeRetry(t *testing.T, s store.Store) {
	// A change that landed, sent again (a retry on a server that does not
	// honor the token) meets its own conditions: the proof settles it as
	// landed, not as a conflict.
	c := leverChange(t, "lever#e", store.IfAbsent(), "audit#e")
	if _, err := store.Apply(ctx(t), s, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx(t), c); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("re-sent change: got %v, want its own conditions refused", err)
	}
	res, err := store.Apply(ctx(t), s, c)
	if err != nil || !res.Confirmed {
		t.Fatalf("Apply of a change that already landed: %+v, %v; want confirmed", res, err)
	}
	// Another writer's change of the same lever is a conflict, not ours.
	other := leverChange(t, "lever#e", store.IfAbsent(), "audit#e2")
	if _, err := store.Apply(ctx(t), s, other); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("a second change under IfAbsent: got %v, want a conflict", err)
	}
}

// A change that landed and whose lever someone else changed since (another
// operator's overwrite) before its answer was settled: the retry meets the
// other writer's lever and its own record. The record settles it as landed,
// whoever wrote the lever since; a lever item would say "not this change".
func testChangeRetryAfterOverwrite(t *testing.T, s store.Store) {
	mine := leverChange(t, "lever#o", store.IfAbsent(), "audit#o1")
	if _, err := store.Apply(ctx(t), s, mine); err != nil {
		t.Fatal(err)
	}
	theirs := leverChange(t, "lever#o", store.IfEquals(store.WriteIDAttr, mine.Token), "audit#o2")
	if _, err := store.Apply(ctx(t), s, theirs); err != nil {
		t.Fatal(err)
	}
	res, err := store.Apply(ctx(t), s, mine)
	if err != nil || !res.Confirmed {
		t.Fatalf("the retry of a change that landed, its lever overwritten since: %+v, %v; want confirmed by its record", res, err)
	}
	if got := mustGet(t, s, "lever#o"); got.WriteID() != theirs.Token {
		t.Errorf("lever#o = %v, want the later writer's, untouched by the settled retry", got)
	}
	// A change that never landed, whose lever moved: a conflict, not ours.
	late := leverChange(t, "lever#o", store.IfEquals(store.WriteIDAttr, mine.Token), "audit#o3")
	if _, err := store.Apply(ctx(t), s, late); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("a change conditional on a lever changed since: %v, want a conflict", err)
	}
	// A proof over an existing item is refused before anything is sent: a
	// lever item is updated by later changes and proves nothing.
	bad := leverChange(t, "lever#p", store.IfAbsent(), "audit#p")
	bad.Proof = "lever#p"
	if _, err := store.Apply(ctx(t), s, bad); err != nil {
		t.Fatalf("a lever created under IfAbsent may prove its change: %v", err)
	}
	bad = leverChange(t, "lever#p", store.IfEquals(store.WriteIDAttr, bad.Token), "audit#p2")
	bad.Proof = "lever#p"
	if _, err := store.Apply(ctx(t), s, bad); !errors.Is(err, store.ErrInvalidItem) {
		t.Errorf("a change proved by an item it writes over: %v, want ErrInvalidItem", err)
	}
	if state(t, s, "audit#p2") != nil {
		t.Error("a change with an invalid proof wrote its record")
	}
}

func testChangeRace(t *testing.T, s store.Store) {
	mustPut(t, s, store.Item{store.PK: "lever#f", "version": int64(1)})
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			c := leverChange(t, "lever#f", store.IfEquals("version", int64(1)), fmt.Sprintf("audit#f%d", i))
			_, errs[i] = store.Apply(ctx(t), s, c)
		})
	}
	wg.Wait()
	won, records := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConditionFailed):
			t.Errorf("writer %d: %v, want applied or a conflict", i, err)
		}
		if state(t, s, fmt.Sprintf("audit#f%d", i)) != nil {
			records++
		}
	}
	if won != 1 || records != 1 {
		t.Errorf("%d writers on one version: %d won and %d records, want exactly 1 and 1", writers, won, records)
	}
}

func testChangeLimits(t *testing.T, s store.Store) {
	tok := token(t)
	ops := make([]store.Op, store.MaxChangeOps+1)
	for i := range ops {
		ops[i] = store.PutOp(store.Item{store.PK: fmt.Sprintf("many#%03d", i), store.WriteIDAttr: tok}, store.IfAbsent())
	}
	if _, err := store.Apply(ctx(t), s, store.Change{Token: tok, Ops: ops, Proof: "many#000"}); !errors.Is(err, store.ErrInvalidItem) {
		t.Errorf("a change of %d writes: got %v, want ErrInvalidItem", len(ops), err)
	}
	if got := state(t, s, "many#000"); got != nil {
		t.Errorf("an oversized change wrote %v", got)
	}
	ops = ops[:store.MaxChangeOps]
	if _, err := store.Apply(ctx(t), s, store.Change{Token: tok, Ops: ops, Proof: "many#000"}); err != nil {
		t.Errorf("a change of %d writes: %v, want applied", len(ops), err)
	}
	twice := []store.Op{store.DeleteOp("x", store.Always()), store.PutOp(store.Item{store.PK: "x", store.WriteIDAttr: tok}, store.Always())}
	if _, err := store.Apply(ctx(t), s, store.Change{Token: tok, Ops: twice, Proof: "x"}); !errors.Is(err, store.ErrInvalidItem) {
		t.Errorf("a change writing one key twice: got %v, want ErrInvalidItem", err)
	}
}
