package list_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/request/list"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/lever/builtin"
	"github.com/kosha-platform/koshactl/internal/policy"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// asking is a local table (its lists index answering queries) with n
// pending requests a second apart, and a factory on it; ids oldest first.
func asking(t *testing.T, n int) (*cmdenv.Factory, store.Store, []string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "local.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := clocktest.NewFake(time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC))
	c := config.BuiltinLocal()
	env := &cmdenv.Env{Name: "local", Context: c, Store: s, Clock: clk,
		Actor: func(context.Context) (string, error) { return "agent@test", nil }}
	env.Kinds = builtin.For(s, clk, "local", c)
	ios, _, _, _ := iostreams.Test()
	f := &cmdenv.Factory{IOStreams: ios, Clock: clk, Env: func(context.Context) (*cmdenv.Env, error) { return env, nil }}
	svc := env.Approvals()
	var ids []string
	for range n {
		clk.Advance(time.Second)
		r, _, err := svc.Submit(ctx, env.Audit(), approval.Submission{
			Change:    approval.Change{Action: breaker.ActionForceOpen, Targets: []string{"openai"}, Reason: "incident", Params: json.RawMessage(`{"for_seconds":1800}`)},
			Requester: audit.Identity{Actor: "agent@test", Source: audit.ActorUnverified},
			Decision:  policy.Decision{Outcome: policy.NeedsApproval, Approvals: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return f, s, ids
}

// rewrite rewrites the request id's item around koshactl, as the
// requester's role may.
func rewrite(t *testing.T, s store.Store, id string, edit func(store.Item)) {
	t.Helper()
	ctx := context.Background()
	it, err := s.Get(ctx, approval.RequestPrefix+id)
	if err != nil {
		t.Fatal(err)
	}
	edit(it)
	if err := s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}
}

// ids are the listed requests' ids, in order.
func ids(res list.Result) []string {
	var out []string
	for _, v := range res.Requests {
		out = append(out, v.ID)
	}
	return out
}

// The requester's role writes its request's item, created_at too. An
// answer whose last request claims a creation older than the whole table
// (here the last of a page of the store's listing, with older requests in
// the next) hands out a cursor that resumes where the lists index listed
// it: the next answer lists every older request, and the forged one is
// shown where the index holds it, flagged tampered.
func TestAForgedCreationMovesNoPage(t *testing.T) {
	t.Parallel()
	f, s, asked := asking(t, approval.OpenPage+3)
	forged := asked[3] // the oldest of the newest page
	rewrite(t, s, forged, func(it store.Item) { it["created_at"] = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() })
	ctx := context.Background()

	first, err := list.Read(ctx, f, &list.Options{Limit: approval.OpenPage})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(first)
	if len(got) != approval.OpenPage || got[len(got)-1] != forged || first.Next == "" {
		t.Fatalf("first answer: %d requests ending %v, next_cursor %q; want %d ending with %s, and a cursor", len(got), got[len(got)-1:], first.Next, approval.OpenPage, forged)
	}
	if v := first.Requests[len(got)-1]; !strings.Contains(v.Tampered, "not where its creation puts it") {
		t.Errorf("the forged request: %+v; want it flagged tampered", v.Verification)
	}
	rest, err := list.Read(ctx, f, &list.Options{Limit: approval.OpenPage, After: first.Next})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{asked[2], asked[1], asked[0]}; !slices.Equal(ids(rest), want) || rest.Next != "" {
		t.Errorf("resumed after the forged request: %v, next_cursor %q; want the older %v and no cursor", ids(rest), rest.Next, want)
	}
}

// Two requests at one place in the index (one written at the other's
// place) are never split by an answer's end: a listing resumes after a
// place, so the second would be skipped.
func TestAnAnswerEndsBetweenPlaces(t *testing.T) {
	t.Parallel()
	f, s, asked := asking(t, 4)
	ctx := context.Background()
	// asked[2] is listed at asked[1]'s place: newest first the index holds
	// asked[3], then asked[1] and asked[2] at one place, then asked[0].
	place := ""
	rewrite(t, s, asked[1], func(it store.Item) { place = it.Str(store.IndexLists.Sort) })
	rewrite(t, s, asked[2], func(it store.Item) { it[store.IndexLists.Sort] = place })

	var seen []string
	next := ""
	for range 4 {
		res, err := list.Read(ctx, f, &list.Options{Limit: 2, After: next})
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ids(res)...)
		if next = res.Next; next == "" {
			break
		}
	}
	slices.Sort(seen)
	want := slices.Clone(asked)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("answers of 2 listed %v; want every request once: %v", seen, want)
	}
}
