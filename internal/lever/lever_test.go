package lever_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite/sqlitetest"
)

// meddling is a store whose next n transactions are preceded by someone
// else's write of every flag they set (between the read and the write).
type meddling struct {
	store.Store
	n int
}

func (m *meddling) Transact(ctx context.Context, c store.Change) error {
	if m.n > 0 {
		m.n--
		for _, op := range c.Ops {
			if op.Put != nil && op.Put.Str("value") == "on" {
				_ = m.Put(ctx, store.Item{store.PK: op.PK(), "value": "theirs", store.WriteIDAttr: fmt.Sprintf("theirs-%d", m.n)}, store.Always())
			}
		}
	}
	return m.Store.Transact(ctx, c)
}

func newService(t *testing.T, attempts int) (*lever.Service, *meddling, *audit.Log) {
	t.Helper()
	m := &meddling{Store: sqlitetest.NewStore(t)}
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	log := audit.NewLog(m.Store, clk, "test")
	reg := lever.NewRegistry(levertest.Flags{Attempts: attempts}.Entry())
	return lever.NewService(m, clk, reg).WithLog(log).WithActor(func(context.Context) (string, error) { return "al", nil }), m, log
}

func set(reason string, targets ...string) lever.Change {
	return lever.Change{Action: "flag.set", Targets: targets, Reason: reason}
}

// A kind the service has never heard of is moved like the built-in ones:
// every target's write and its record in one transaction, the report in
// order, the announcement in the kind's words; a target already as asked
// is neither written nor recorded.
func TestAnyKindIsMovedTheSameWay(t *testing.T) {
	svc, st, log := newService(t, 0)
	ctx := context.Background()
	if _, err := svc.Change(ctx, set("first", "b")); err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Change(ctx, set("drill", "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcomes) != 3 || !rep.Outcomes[0].Written || !rep.Outcomes[1].Noop || rep.Outcomes[1].Written || !rep.Outcomes[2].Written {
		t.Fatalf("outcomes %+v: want a and c written, b already set", rep.Outcomes)
	}
	if rep.Outcomes[0].Token != rep.Outcomes[2].Token || rep.Outcomes[0].Record.Change != rep.Outcomes[0].Token {
		t.Errorf("a and c in transactions %s and %s: want one, its token their records' change", rep.Outcomes[0].Token, rep.Outcomes[2].Token)
	}
	if ev := rep.Event; ev == nil || ev.Action != "flag.set" || ev.Actor != "al" || len(ev.Levers) != 2 || ev.Levers[1].Subject != "flag#c" {
		t.Errorf("announcement %+v", ev)
	}
	l, _ := log.List(ctx, audit.Query{Action: "flag.set"})
	if len(l.Records) != 3 {
		t.Errorf("%d records, want 3 (b's first, then a's and c's)", len(l.Records))
	}
	if it, err := st.Get(ctx, "flag#c"); err != nil || it.WriteID() != rep.Outcomes[2].Token {
		t.Errorf("flag#c %v %v", it, err)
	}
	// Dry runs and quiet changes announce nothing.
	dry := set("drill", "d")
	dry.DryRun = true
	if rep, err := svc.Change(ctx, dry); err != nil || rep.Event != nil || rep.Outcomes[0].Written {
		t.Errorf("dry run: %+v %v", rep, err)
	}
}

// The service's own refusals come before anything is read: a name twice
// (exit 2), an action no kind has, the kind's rules, no audit log.
func TestTheServiceRefusesBeforeReading(t *testing.T) {
	svc, st, _ := newService(t, 0)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		c    lever.Change
		svc  *lever.Service
		want func(error) bool
	}{
		"twice":   {set("r", "a", "a"), svc, func(err error) bool { return errors.Is(err, lever.ErrNamedTwice) && exitcode.Of(err) == exitcode.Usage }},
		"unknown": {lever.Change{Action: "flag.wave", Targets: []string{"a"}, Reason: "r"}, svc, func(err error) bool { return errors.Is(err, lever.ErrUnknownKind) }},
		"rules": {set("", "a"), svc, func(err error) bool {
			var re *lever.RefusedError
			return errors.As(err, &re)
		}},
		"no log": {set("r", "a"), svc.WithLog(nil), func(err error) bool { return errors.Is(err, lever.ErrNoAuditLog) }},
	} {
		if _, err := tc.svc.Change(ctx, tc.c); !tc.want(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := st.Get(ctx, "flag#a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused change wrote: %v", err)
	}
}

// A write refused by its own item's condition (someone wrote it between
// the read and the write) is read and decided again, as a new change with
// new records, as often as the action allows; then the kind words it.
func TestARefusedTargetIsReadAgainAsTheActionAllows(t *testing.T) {
	svc, m, log := newService(t, 3)
	ctx := context.Background()
	m.n = 2
	rep, err := svc.Change(ctx, set("busy", "a"))
	if err != nil || rep.Outcomes[0].Attempts != 3 || !rep.Outcomes[0].Written {
		t.Fatalf("a flag written over twice meanwhile: %+v %v; want written on the third attempt", rep.Outcomes, err)
	}
	if l, _ := log.List(ctx, audit.Query{Action: "flag.set"}); len(l.Records) != 1 || l.Records[0].Change != rep.Outcomes[0].Token {
		t.Errorf("records %+v: want the one of the change that landed", l.Records)
	}
	// Tried once: its first transaction, planned unread at the floor,
	// is refused by what is there, decided on it, and refused again.
	once, m, _ := newService(t, 0)
	m.n = 2
	if _, err := once.Change(ctx, set("busy", "a")); !errors.Is(err, lever.ErrConflict) {
		t.Errorf("an action tried once: %v, want its kind's conflict", err)
	}
}

// Several planned changes commit as one: their writes share the
// transaction, each change keeps its own report; attached writes limit a
// change to one transaction.
func TestChangesCommittedTogetherShareTheTransaction(t *testing.T) {
	svc, _, _ := newService(t, 0)
	ctx := context.Background()
	a, err := svc.Plan(ctx, set("one", "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Plan(ctx, set("two", "b"))
	if err != nil {
		t.Fatal(err)
	}
	reps, err := svc.CommitAll(ctx, a, b)
	if err != nil || reps[0].Outcomes[0].Token == "" || reps[0].Outcomes[0].Token != reps[1].Outcomes[0].Token {
		t.Fatalf("two changes committed together: %+v %v; want one transaction", reps, err)
	}
	many := make([]string, 60)
	for i := range many {
		many[i] = fmt.Sprintf("f%03d", i)
	}
	p, err := svc.Plan(ctx, set("many", many[:lever.MaxAttached+1]...))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Attach(&lever.Attach{Ops: func(string, time.Time) []store.Op { return nil }}); err != nil {
		t.Fatal(err)
	}
	var tle *lever.TooLargeError
	if rep, err := svc.Commit(ctx, p); !errors.As(err, &tle) || !tle.Attached || exitcode.Of(err) != exitcode.Usage || len(rep.Written()) != 0 {
		t.Errorf("%d levers with attached writes: %v, want refused whole (exit 2)", lever.MaxAttached+1, err)
	}
	// Two changes of 30 are 60 writes: more than one transaction, refused
	// unless both were asked in chunks.
	x, _ := svc.Plan(ctx, set("x", many[:30]...))
	y, _ := svc.Plan(ctx, set("y", many[30:]...))
	if _, err := svc.CommitAll(ctx, x, y); !errors.As(err, &tle) || tle.Levers != len(many) || tle.Attached {
		t.Errorf("two changes of %d writes in all, not chunked: %v, want refused", len(many), err)
	}
}

// taking is a store where someone else writes the flag taken just before
// the transaction that holds its write is applied.
type taking struct {
	store.Store
	taken string
}

func (s *taking) Transact(ctx context.Context, c store.Change) error {
	for _, op := range c.Ops {
		if op.PK() == s.taken {
			_ = s.Put(ctx, store.Item{store.PK: s.taken, "value": "theirs", store.WriteIDAttr: "theirs"}, store.Always())
		}
	}
	return s.Store.Transact(ctx, c)
}

// A change of more levers than one transaction holds is refused before
// anything is written, naming the limit; asked in chunks, each chunk is
// whole, and the report says of every lever whether it was written, in
// which transaction, and why not.
func TestAChangeIsWholeOrAskedInChunks(t *testing.T) {
	st := &taking{Store: sqlitetest.NewStore(t), taken: "flag#f070"}
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	log := audit.NewLog(st.Store, clk, "test")
	svc := lever.NewService(st, clk, lever.NewRegistry(levertest.Flags{}.Entry())).WithLog(log).WithActor(func(context.Context) (string, error) { return "al", nil })
	ctx := context.Background()
	many := make([]string, 80)
	for i := range many {
		many[i] = fmt.Sprintf("f%03d", i)
	}
	rep, err := svc.Change(ctx, set("all", many...))
	var tle *lever.TooLargeError
	if !errors.As(err, &tle) || tle.Levers != 80 || tle.Max != lever.ChunkLevers || exitcode.Of(err) != exitcode.Usage || len(rep.Written()) != 0 {
		t.Fatalf("80 levers, not chunked: %v, want refused up front (exit 2)", err)
	}
	for _, want := range []string{"80 flag items", "at most 50", "nothing was written", "in chunks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if l, _ := log.List(ctx, audit.Query{Action: "flag.set"}); len(l.Records) != 0 {
		t.Fatalf("a refused change wrote %d records", len(l.Records))
	}
	c := set("all", many...)
	c.Chunked = true
	rep, err = svc.Change(ctx, c)
	if !errors.Is(err, lever.ErrConflict) || len(rep.Outcomes) != 80 {
		t.Fatalf("80 levers in chunks, one taken meanwhile: %v, %d outcomes; want the conflict and every lever", err, len(rep.Outcomes))
	}
	for i, o := range rep.Outcomes {
		chunk := i/lever.ChunkLevers + 1
		if o.Chunk != chunk || o.Written != (chunk == 1) || (o.Err == nil) != o.Written {
			t.Fatalf("lever %d: %+v; want chunk %d, written only in the first chunk, an error otherwise", i, o, chunk)
		}
	}
	if l, _ := log.List(ctx, audit.Query{Action: "flag.set", Limit: 200}); len(l.Records) != lever.ChunkLevers {
		t.Errorf("%d records, want the first chunk's %d", len(l.Records), lever.ChunkLevers)
	}
}
