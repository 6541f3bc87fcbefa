package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
)

// scripted is a Transactor whose sends answer from a script, and whose
// items live in a map the script may change (a send that "lands").
type scripted struct {
	items   map[string]store.Item
	answers []func(c store.Change) error
	sends   int
	getErr  error
	gets    int
}

func (s *scripted) Transact(ctx context.Context, c store.Change) error {
	a := s.answers[s.sends]
	s.sends++
	return a(c)
}

func (s *scripted) Get(ctx context.Context, pk string) (store.Item, error) {
	s.gets++
	if s.getErr != nil {
		return nil, s.getErr
	}
	it, ok := s.items[pk]
	if !ok {
		return nil, fmt.Errorf("get %q: %w", pk, store.ErrNotFound)
	}
	return it, nil
}

func (s *scripted) land(c store.Change) {
	for _, op := range c.Ops {
		if op.Put != nil {
			s.items[op.PK()] = op.Put
		} else {
			delete(s.items, op.Delete)
		}
	}
}

func change(t *testing.T) store.Change {
	tok, err := store.NewWriteID()
	if err != nil {
		t.Fatal(err)
	}
	return store.Change{Token: tok, Proof: "audit#1", Ops: []store.Op{
		store.DeleteOp("breaker#openai", store.IfEquals(store.WriteIDAttr, "old")),
		store.PutOp(store.Item{store.PK: "audit#1", store.WriteIDAttr: tok}, store.IfAbsent()),
	}}
}

var (
	// conflict names both writes without the items (a backend that does
	// not return them): only a read of the proof settles it.
	conflict = func(store.Change) error {
		return &store.TxConflictError{Conflicts: []store.ConditionError{{PK: "breaker#openai"}, {PK: "audit#1"}}}
	}
	unreachable = func(store.Change) error { return fmt.Errorf("send: %w", store.ErrUnavailable) }
)

func TestApplySettlesALostAnswer(t *testing.T) {
	t.Parallel()
	c := change(t)
	for _, tc := range []struct {
		name          string
		interrupt     bool
		answers       func(s *scripted) []func(store.Change) error
		getErr        error
		wantConfirmed bool
		wantErr       error
		wantSends     int
	}{
		{name: "landed, answer lost, retry meets its own conditions",
			answers: func(s *scripted) []func(store.Change) error {
				return []func(store.Change) error{func(c store.Change) error { s.land(c); return conflict(c) }}
			}, wantConfirmed: true, wantSends: 1},
		{name: "a genuine conflict",
			answers: func(s *scripted) []func(store.Change) error { return []func(store.Change) error{conflict} },
			wantErr: store.ErrConditionFailed, wantSends: 1},
		{name: "landed, then the store went away before the answer",
			answers: func(s *scripted) []func(store.Change) error {
				return []func(store.Change) error{func(c store.Change) error { s.land(c); return unreachable(c) }}
			}, wantConfirmed: true, wantSends: 1},
		{name: "not landed, store unreachable, proof read says so",
			answers: func(s *scripted) []func(store.Change) error { return []func(store.Change) error{unreachable} },
			wantErr: store.ErrUnavailable, wantSends: 1},
		{name: "unreachable, and the proof cannot be read either",
			answers: func(s *scripted) []func(store.Change) error { return []func(store.Change) error{unreachable} },
			getErr:  fmt.Errorf("get: %w", store.ErrUnavailable),
			wantErr: store.ErrOutcomeUnknown, wantSends: 1},
		{name: "interrupted in flight: re-issued on a context of its own, lands",
			interrupt: true,
			answers: func(s *scripted) []func(store.Change) error {
				return []func(store.Change) error{
					func(store.Change) error { return context.Canceled },
					func(c store.Change) error { s.land(c); return nil },
				}
			}, wantConfirmed: true, wantSends: 2},
		{name: "interrupted after landing: the re-issue meets its own conditions",
			interrupt: true,
			answers: func(s *scripted) []func(store.Change) error {
				return []func(store.Change) error{
					func(c store.Change) error { s.land(c); return context.Canceled },
					conflict,
				}
			}, wantConfirmed: true, wantSends: 2},
		{name: "interrupted in flight, the re-issue unanswered until its own deadline, the proof unreadable",
			interrupt: true,
			answers: func(s *scripted) []func(store.Change) error {
				return []func(store.Change) error{
					func(store.Change) error { return context.Canceled },
					func(store.Change) error { return fmt.Errorf("send: %w", context.DeadlineExceeded) },
				}
			}, getErr: context.DeadlineExceeded, wantErr: store.ErrOutcomeUnknown, wantSends: 2},
		{name: "interrupted in flight, the re-issue unanswered, the proof says it landed",
			interrupt: true,
			answers: func(s *scripted) []func(store.Change) error {
				return []func(store.Change) error{
					func(store.Change) error { return context.Canceled },
					func(c store.Change) error { s.land(c); return fmt.Errorf("send: %w", context.DeadlineExceeded) },
				}
			}, wantConfirmed: true, wantSends: 2},
		{name: "interrupted before anything was sent: not re-issued",
			interrupt: true,
			answers: func(s *scripted) []func(store.Change) error {
				return []func(store.Change) error{func(store.Change) error { return fmt.Errorf("%w: %w", store.ErrNotSent, context.Canceled) }}
			}, wantErr: store.ErrNotSent, wantSends: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{items: map[string]store.Item{"breaker#openai": {store.PK: "breaker#openai", store.WriteIDAttr: "old"}}, getErr: tc.getErr}
			s.answers = tc.answers(s)
			ctx, cancel := context.WithCancel(t.Context())
			if tc.interrupt {
				cancel()
			} else {
				defer cancel()
			}
			res, err := store.Apply(ctx, s, c)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Apply: %v, want %v", err, tc.wantErr)
			}
			if res.Confirmed != tc.wantConfirmed {
				t.Errorf("Confirmed = %v, want %v", res.Confirmed, tc.wantConfirmed)
			}
			if s.sends != tc.wantSends {
				t.Errorf("sent %d times, want %d", s.sends, tc.wantSends)
			}
			if errors.Is(err, store.ErrConditionFailed) && errors.Is(err, store.ErrOutcomeUnknown) {
				t.Errorf("%v is both a conflict and unknown", err)
			}
		})
	}
}

func TestApplyRefusesAChangeWithoutProof(t *testing.T) {
	t.Parallel()
	c := change(t)
	c.Proof = "breaker#openai" // deleted, so it cannot carry the token
	s := &scripted{items: map[string]store.Item{}}
	if _, err := store.Apply(t.Context(), s, c); !errors.Is(err, store.ErrInvalidItem) || s.sends != 0 {
		t.Errorf("Apply: %v after %d sends, want ErrInvalidItem before any send", err, s.sends)
	}
}

// A refusal that names the stored items settles the change without a read:
// the proof's own item carrying the token is a change that landed; a
// refusal that leaves the proof's condition holding is a conflict.
func TestApplySettlesARefusalFromTheItemsItNames(t *testing.T) {
	t.Parallel()
	c := change(t)
	for _, tc := range []struct {
		name      string
		conflicts []store.ConditionError
		confirmed bool
	}{
		{"the proof's item is this change's", []store.ConditionError{{PK: "breaker#openai"}, {PK: "audit#1", Current: store.Item{store.PK: "audit#1", store.WriteIDAttr: c.Token}}}, true},
		{"the proof's item is another's", []store.ConditionError{{PK: "audit#1", Current: store.Item{store.PK: "audit#1", store.WriteIDAttr: "planted"}}}, false},
		{"the proof's condition held", []store.ConditionError{{PK: "breaker#openai", Current: store.Item{store.PK: "breaker#openai"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{items: map[string]store.Item{}}
			s.answers = []func(store.Change) error{func(store.Change) error { return &store.TxConflictError{Conflicts: tc.conflicts} }}
			res, err := store.Apply(t.Context(), s, c)
			if res.Confirmed != tc.confirmed || (err == nil) != tc.confirmed || s.gets != 0 {
				t.Errorf("Apply: %+v, %v after %d reads; want confirmed %v, no read", res, err, s.gets, tc.confirmed)
			}
		})
	}
}
