package mcp_test

import (
	"strings"
	"testing"
	"time"
)

// pending_requests answers a page: at most limit requests, newest first,
// and next_cursor when there are more, which the next call passes as
// cursor to get the older ones; a cursor no answer gave and a limit past
// the bound are usage errors.
func TestPendingRequestsArePagedWithACursor(t *testing.T) {
	t.Parallel()
	r := newRig(t, false)
	cs := r.connect(t)
	var ids []string
	for _, dep := range []string{"core-api", "openai", "postgres"} {
		r.clk.Advance(time.Second)
		res, doc := call(t, cs, "propose_force_open", map[string]any{"dependencies": []string{dep}, "reason": "agent: " + dep, "for": "15m"})
		if res.IsError {
			t.Fatalf("proposal on %s: %v", dep, doc)
		}
		ids = append(ids, doc["request_id"].(string))
	}
	listed := func(doc map[string]any) []string {
		var out []string
		reqs, _ := doc["requests"].([]any)
		for _, q := range reqs {
			out = append(out, q.(map[string]any)["id"].(string))
		}
		return out
	}
	res, doc := call(t, cs, "pending_requests", map[string]any{"limit": 2})
	next, _ := doc["next_cursor"].(string)
	if got := listed(doc); res.IsError || len(got) != 2 || got[0] != ids[2] || got[1] != ids[1] || next == "" {
		t.Fatalf("first page: %v; want %s, %s and a next_cursor", doc, ids[2], ids[1])
	}
	if !strings.Contains(textOf(res), "cursor "+next) {
		t.Errorf("the summary does not say how to go on: %s", textOf(res))
	}
	res, doc = call(t, cs, "pending_requests", map[string]any{"limit": 2, "cursor": next})
	if got := listed(doc); res.IsError || len(got) != 1 || got[0] != ids[0] || doc["next_cursor"] != nil {
		t.Fatalf("second page: %v; want %s alone, no next_cursor", doc, ids[0])
	}
	res, doc = call(t, cs, "pending_requests", map[string]any{})
	if got := listed(doc); res.IsError || len(got) != 3 || doc["next_cursor"] != nil {
		t.Errorf("default limit: %v; want all three, no next_cursor", doc)
	}
	for _, args := range []map[string]any{{"cursor": "yesterday"}, {"limit": 501}} {
		if res, doc := call(t, cs, "pending_requests", args); !res.IsError || doc["exit_name"] != "usage" {
			t.Errorf("%v: %v; want a usage error", args, doc)
		}
	}
}
