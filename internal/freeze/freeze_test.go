package freeze_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/store"
)

var t0 = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

func example() freeze.Freeze {
	return freeze.Freeze{Actor: "alice@laptop", Reason: "payments failing", Ref: "INC-123", SetAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
		Version: 1, WriteID: "5f0c3a9e2b7d41c8a6e0f1d2c3b4a596"}
}

// What a writer encodes is what a reader decodes, lifted or not, and the
// record outlives its end by the retention (and so every header minted
// before it).
func TestItemRoundTrip(t *testing.T) {
	lifted := example()
	lifted.LiftedAt, lifted.LiftedBy, lifted.LiftReason, lifted.Version = t0.Add(5*time.Minute+400*time.Millisecond), "bob@laptop", "not us", 2
	open := example()
	open.ExpiresAt, open.Ref = time.Time{}, ""
	for name, f := range map[string]freeze.Freeze{"set": example(), "lifted": lifted, "until lifted, no ref": open} {
		t.Run(name, func(t *testing.T) {
			it := f.Item()
			if it.PK() != freeze.Key {
				t.Fatalf("pk %q", it.PK())
			}
			got, err := freeze.FromItem(it)
			if err != nil || got.Malformed() {
				t.Fatalf("decode: %v %v", err, got.Problems)
			}
			if got.Actor != f.Actor || got.Reason != f.Reason || got.Ref != f.Ref || !got.SetAt.Equal(f.SetAt) || !got.ExpiresAt.Equal(f.ExpiresAt) ||
				!got.LiftedAt.Equal(f.LiftedAt) || got.LiftedBy != f.LiftedBy || got.LiftReason != f.LiftReason || got.Version != f.Version || got.WriteID != f.WriteID {
				t.Errorf("round trip\n got %+v\nwant %+v", got, f)
			}
			ttl, hasTTL := it[store.TTLAttr].(int64)
			end, hasEnd := f.End()
			if hasTTL != hasEnd {
				t.Fatalf("ttl %v present without an end, or missing with one", it[store.TTLAttr])
			}
			if hasEnd && time.Unix(ttl, 0).Before(end.Add(freeze.HeaderLifetime)) {
				t.Errorf("ttl %s collects the record before every header minted before its end %s has expired", time.Unix(ttl, 0), end)
			}
		})
	}
}

// A write replaces exactly the item read: by its write_id, else by its
// version as stored (a malformed one included), and the next version
// continues the sequence.
func TestConditionAndNextVersion(t *testing.T) {
	read := func(mod func(store.Item)) freeze.Freeze {
		it := example().Item()
		mod(it)
		f, err := freeze.FromItem(it)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	withID := read(func(store.Item) {})
	if a, v, ok := withID.Condition().Match(); !ok || a != freeze.AttrWriteID || v != withID.WriteID {
		t.Errorf("condition %s, want write_id = %s", withID.Condition(), withID.WriteID)
	}
	if withID.NextVersion() != 2 {
		t.Errorf("next version %d", withID.NextVersion())
	}
	odd := read(func(it store.Item) { delete(it, freeze.AttrWriteID); it[freeze.AttrVersion] = store.Number("7.5") })
	if a, v, ok := odd.Condition().Match(); !ok || a != freeze.AttrVersion || v != store.Number("7.5") {
		t.Errorf("condition %s, want version = 7.5 as stored", odd.Condition())
	}
	if odd.NextVersion() != 8 {
		t.Errorf("next version after 7.5: %d", odd.NextVersion())
	}
	none := read(func(it store.Item) { delete(it, freeze.AttrWriteID); delete(it, freeze.AttrVersion) })
	if a, ok := none.Condition().Lacks(); !ok || a != freeze.AttrVersion {
		t.Errorf("condition %s, want present without version", none.Condition())
	}
}

// The rule on an injected clock: frozen until the end, then every header
// issued before the end (rounded up to the second) is void and every one
// issued at or after it is honoured.
func TestRuleOnAClock(t *testing.T) {
	f := example()
	lift := t0.Add(5*time.Minute + 400*time.Millisecond)
	if !f.FrozenAt(lift) {
		t.Fatal("not frozen before its lift")
	}
	pre := t0.Add(-time.Minute).Unix()
	if err := f.AdmitChaos(pre, lift); !errors.Is(err, chaos.ErrFrozen) {
		t.Fatalf("frozen fleet admitted a header: %v", err)
	}
	f.LiftedAt, f.LiftedBy = lift, "bob@laptop"
	after := lift.Add(time.Minute)
	if f.FrozenAt(after) || f.State(after) != freeze.StateLifted {
		t.Fatalf("lifted freeze still frozen (%s)", f.State(after))
	}
	var fr *chaos.FreezeRefusal
	if err := f.AdmitChaos(pre, after); !errors.As(err, &fr) || fr.Frozen || fr.Freeze.Ref != "INC-123" || !strings.Contains(fr.Reason, "never honoured") {
		t.Errorf("pre-freeze header after the lift: %v", err)
	}
	if err := f.AdmitChaos(lift.Unix(), after); err == nil {
		t.Error("a header issued in the second of the lift, before it, is honoured")
	}
	if err := f.AdmitChaos(lift.Unix()+1, after); err != nil {
		t.Errorf("a header issued after the lift is refused: %v", err)
	}
}

// chaos sign's rule: refused while frozen (exit 7, naming who, why, the
// reference and until when), a wait of under a second in the second of the
// lift, nothing otherwise.
func TestCheckMint(t *testing.T) {
	f := example()
	_, err := freeze.CheckMint(&f, t0.Add(time.Minute))
	var fe *freeze.FrozenError
	if !errors.As(err, &fe) || !errors.Is(err, freeze.ErrFrozen) || exitcode.Of(err) != exitcode.Refused {
		t.Fatalf("frozen mint: %v (exit %d)", err, exitcode.Of(err))
	}
	for _, want := range []string{"alice@laptop", "INC-123", `"payments failing"`, "until 2026-11-29T19:30:00Z", "freeze lift"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	f.LiftedAt, f.LiftedBy = t0.Add(5*time.Minute+400*time.Millisecond), "bob@laptop"
	if wait, err := freeze.CheckMint(&f, f.LiftedAt.Add(100*time.Millisecond)); err != nil || wait != 500*time.Millisecond {
		t.Errorf("in the second of the lift: wait %s, %v; want 500ms", wait, err)
	}
	if wait, err := freeze.CheckMint(&f, f.LiftedAt.Add(time.Second)); err != nil || wait != 0 {
		t.Errorf("after the lift: wait %s, %v", wait, err)
	}
	if wait, err := freeze.CheckMint(nil, t0); err != nil || wait != 0 {
		t.Errorf("no freeze: wait %s, %v", wait, err)
	}
}

// Text from the table reaches a terminal only rendered: a control
// character in the actor or the reason is escaped in Describe.
func TestDescribeEscapesTheTable(t *testing.T) {
	f := example()
	f.Actor, f.Reason = "eve\x1b[2J", "line\nbreak\u202e"
	s := f.Describe(t0)
	if strings.ContainsAny(s, "\x1b\n\u202e") {
		t.Errorf("Describe passes control characters through: %q", s)
	}
}

type getter func(ctx context.Context, pk string) (store.Item, error)

func (g getter) Get(ctx context.Context, pk string) (store.Item, error) { return g(ctx, pk) }

func TestRead(t *testing.T) {
	ctx := context.Background()
	f, err := freeze.Read(ctx, getter(func(_ context.Context, pk string) (store.Item, error) {
		return nil, store.ErrNotFound
	}))
	if f != nil || err != nil {
		t.Errorf("absent item: %v, %v; want nil, nil", f, err)
	}
	_, err = freeze.Read(ctx, getter(func(context.Context, string) (store.Item, error) { return nil, store.ErrUnavailable }))
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), freeze.Key) {
		t.Errorf("store error: %v", err)
	}
	var asked string
	f, err = freeze.Read(ctx, getter(func(_ context.Context, pk string) (store.Item, error) {
		asked = pk
		return example().Item(), nil
	}))
	if err != nil || f == nil || f.Ref != "INC-123" || asked != freeze.Key {
		t.Errorf("read %v, %v (asked %q)", f, err, asked)
	}
}

func TestValidateRef(t *testing.T) {
	if err := freeze.ValidateRef("INC 1"); !errors.Is(err, freeze.ErrInvalidRef) || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "INC-123") {
		t.Errorf("bad ref: %v", err)
	}
}
