package approval_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"os"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Requests stored before a change's params belonged to its lever's kind
// (one struct with every kind's fields) read, hash and are summarized as
// they always were: the canonical form is the same bytes, so none of them
// reads as edited, and one made now is readable by the koshactl before.
func TestRequestsStoredBeforeKindsReadTheSame(t *testing.T) {
	c, svc, _, _ := fourEyes(t)
	ctx := context.Background()
	for _, tc := range []struct {
		change, summary string
	}{
		{`{"action":"breaker.force-open","targets":["openai","core-api"],"reason":"provider \u003cincident\u003e","for_seconds":1800,"overwrite":true,"before":{"core-api":null,"openai":{"actor":"bob","state":"forced_open","version":3}}}`,
			"force open openai, core-api for 30m, replacing an active override"},
		{`{"action":"breaker.force-open","targets":["openai"],"reason":"r","until":"2026-11-29T20:00:00.5Z","before":{"openai":null}}`,
			"force open openai until 2026-11-29T20:00:00.5Z"},
		{`{"action":"breaker.force-open","targets":["openai"],"reason":"r","no_expiry":true,"before":{"openai":null}}`,
			"force open openai (never expires)"},
		{`{"action":"breaker.clear","targets":["openai"],"reason":"r","before":{"openai":{"state":"forced_open"}}}`, "clear openai"},
		{`{"action":"ratelimit.set","targets":["c1"],"reason":"r","tokens":0,"capacity":20,"refill_per_second":1,"before":{"c1":{"exists":true,"tokens":3,"refilled_tokens":3}}}`,
			"set the rate-limit bucket of c1 to 0 tokens"},
		{`{"action":"ratelimit.drain","targets":["c1","c2"],"reason":"r","hold_for":"5m0s","capacity":20,"refill_per_second":1,"before":{"c1":null,"c2":null}}`,
			"drain the rate-limit bucket of c1, c2 for 5m0s"},
		{`{"action":"ratelimit.reset","targets":["c1"],"reason":"r","capacity":20,"refill_per_second":1,"before":{"c1":null}}`,
			"reset the rate-limit bucket of c1"},
	} {
		sum := sha256.Sum256([]byte(tc.change))
		it := store.Item{store.PK: approval.RequestPrefix + "0123456789ab", "change": tc.change, "sha256": hex.EncodeToString(sum[:]),
			"requester": alice.Actor, "status": "pending", "created_at": int64(1), "expires_at": int64(4102444800000), "approvals_needed": int64(1),
			"approvers": "[]"}
		if err := c.s.Put(ctx, it, store.Always()); err != nil {
			t.Fatal(err)
		}
		r, err := svc.Get(ctx, "0123456789ab")
		if err != nil {
			t.Fatalf("%s: %v", tc.change, err)
		}
		if err := r.Check(""); err != nil {
			t.Errorf("%s: %v, want it to hash as stored", tc.change, err)
		}
		if got, err := r.Change.Canonical(); err != nil || string(got) != tc.change {
			t.Errorf("canonical form %s, %v; want the bytes stored:\n%s", got, err, tc.change)
		}
		if r.Change.Summary() != tc.summary {
			t.Errorf("summary %q, want %q", r.Change.Summary(), tc.summary)
		}
	}
}

// A change made now encodes its params as the fields the old struct had,
// in its order: a request of this koshactl is the same bytes the one
// before would have stored (and reads there).
func TestAChangeMadeNowIsTheOldForm(t *testing.T) {
	_, _, _, clk := fourEyes(t)
	ov := breaker.NewOverrides(nil, clk)
	b, err := ratelimit.NewBuckets(nil, clk, ratelimit.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind lever.Kind
		c    lever.Change
		want string
	}{
		{ov, breaker.ForceOpen("r", breaker.ForceParams{For: 90 * 60e9, Overwrite: true}, "openai"), `{"for_seconds":5400,"overwrite":true}`},
		{ov, breaker.ForceOpen("r", breaker.ForceParams{NoExpiry: true, For: 60e9}, "openai"), `{"no_expiry":true}`},
		{ov, breaker.Clear("r", "openai"), `{}`},
		{b, b.Change(ratelimit.OpSet, "r", ratelimit.Params{Tokens: 0}, "c1"), `{"tokens":0,"capacity":20,"refill_per_second":1}`},
		{b, b.Change(ratelimit.OpDrain, "r", ratelimit.Params{HoldFor: 3e9}, "c1"), `{"hold_for":"3s","capacity":20,"refill_per_second":1}`},
		{b, b.Change(ratelimit.OpReset, "r", ratelimit.Params{Tokens: 5}, "c1"), `{"capacity":20,"refill_per_second":1}`},
	} {
		got, err := tc.kind.Encode(tc.c)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: params %s, %v; want %s", tc.c.Action, got, err, tc.want)
		}
		back, err := tc.kind.Params(tc.c.Action, got)
		if err != nil {
			t.Fatalf("%s: %v", tc.c.Action, err)
		}
		again, _ := tc.kind.Encode(lever.Change{Action: tc.c.Action, Params: back})
		if string(again) != tc.want {
			t.Errorf("%s: decoded and encoded again %s, want %s", tc.c.Action, again, tc.want)
		}
	}
}

// The table's policy is validated against the schema of the lever kinds
// the context has; koshactl's built-in kinds make the schema every stored
// policy was validated against before kinds made it (testdata), so none
// of them reads differently.
func TestTheBuiltInKindsMakeTheSchemaPoliciesHad(t *testing.T) {
	want, err := os.ReadFile("testdata/builtin.cedarschema")
	if err != nil {
		t.Fatal(err)
	}
	if got := approval.PolicySchema(levertest.Specs()).Text; got != string(want) {
		t.Errorf("schema:\n%s\nwant:\n%s", got, want)
	}
}
