package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
)

// The proposal tools are the registry's: a kind registered with a
// proposal on one action (the tests' flag kind, its lift proposed with a
// required "ticket") is offered as that tool, with exactly its arguments,
// and nothing of the built-in kinds' is; its arguments are checked against
// the proposal (unknown, mistyped or missing: usage, nothing stored) and
// the kind makes the change that is requested.
func TestProposalToolsAreTheRegisteredKinds(t *testing.T) {
	t.Parallel()
	r := newRig(t, false)
	r.env.Kinds = lever.NewRegistry(levertest.Flags{}.Entry())
	cs := r.connect(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var proposals []string
	for _, tool := range res.Tools {
		if !tool.Annotations.ReadOnlyHint {
			proposals = append(proposals, tool.Name)
		}
		if tool.Name != "propose_flag_lift" {
			continue
		}
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		required, _ := schema["required"].([]any)
		var names []string
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		if strings.Join(names, ",") != "flags,reason,ticket" || len(required) != 3 || schema["additionalProperties"] == nil {
			t.Errorf("propose_flag_lift's schema: %v", schema)
		}
	}
	if !slices.Equal(proposals, []string{"propose_flag_lift"}) {
		t.Fatalf("proposal tools %v, want the flag kind's lift alone", proposals)
	}

	for _, bad := range []map[string]any{
		{"flags": []string{"a"}, "reason": "r"},
		{"flags": []string{"a"}, "reason": "r", "ticket": 42},
		{"flags": []string{"a"}, "reason": "r", "ticket": "T-1", "for": "1h"},
		{"flags": "a", "reason": "r", "ticket": "T-1"},
	} {
		res, doc := call(t, cs, "propose_flag_lift", bad)
		if msg, _ := doc["error"].(string); !res.IsError || doc["exit_name"] != "usage" || !strings.Contains(msg, "arguments of propose_flag_lift") {
			t.Errorf("propose_flag_lift %v: %v, want a usage error naming the arguments", bad, doc)
		}
	}
	if l, err := r.env.Approvals().List(context.Background()); err != nil || len(l.Requests) != 0 {
		t.Fatalf("refused proposals stored %d requests (%v)", len(l.Requests), err)
	}

	if _, err := r.env.Levers().Change(context.Background(), lever.Change{Action: "flag.set", Targets: []string{"a"}, Reason: "set"}); err != nil {
		t.Fatal(err)
	}
	res2, doc := call(t, cs, "propose_flag_lift", map[string]any{"flags": []string{"a"}, "reason": "r", "ticket": "T-1"})
	id, _ := doc["request_id"].(string)
	if res2.IsError || id == "" {
		t.Fatalf("propose_flag_lift: %v", doc)
	}
	got, err := r.env.Approvals().Get(context.Background(), id)
	if err != nil || got.Change.Action != "flag.lift" || !slices.Equal(got.Change.Targets, []string{"a"}) || got.Change.Reason != "r (T-1)" {
		t.Errorf("request %s: %+v %v, want the kind's lift of a for \"r (T-1)\"", id, got.Change, err)
	}
}
