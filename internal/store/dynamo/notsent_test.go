package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// A change none of whose attempts could connect (the endpoint refuses
// connections) was not sent: store.Apply says so, unavailable (exit 5),
// and does not take it for a lost answer (whose settling read fails too:
// an unknown outcome, exit 8).
func TestAChangeThatCouldNotConnectWasNotSent(t *testing.T) {
	t.Parallel()
	s := dynamo.NewFromConfig(moto.Config(t, "http://127.0.0.1:1"), "t")
	c := store.Change{Token: "0123456789abcdef0123456789abcdef", Ops: []store.Op{store.PutOp(store.Item{store.PK: "breaker#x", store.WriteIDAttr: "0123456789abcdef0123456789abcdef"}, store.IfAbsent())}, Proof: "breaker#x"}
	_, err := store.Apply(context.Background(), s, c)
	if !errors.Is(err, store.ErrNotSent) || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("%v; want not sent, unavailable, not unknown", err)
	}
}
