package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/request/show"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// An agent's force-open proposal carries what the force would do to the
// platform's tools, in its result and its summary, and request show puts
// the same impact before the person who approves it.
func TestProposalCarriesTheImpactRequestShowShows(t *testing.T) {
	t.Parallel()
	r := newRig(t, false)
	// The matrix's impact: the rig's clock is fake, so a rate read's
	// second scrape would wait on it (the rates are the CLI tests').
	r.env.Impact = &impact.Assessor{}
	cs := r.connect(t)
	res, doc := call(t, cs, "propose_force_open", map[string]any{"dependencies": []string{"screening-sim"}, "reason": "agent: screenings time out", "for": "30m"})
	if res.IsError {
		t.Fatalf("proposal: %+v", res.Content[0])
	}
	proposed, _ := json.Marshal(doc["impact"])
	for _, want := range []string{`"tool":"screen_entity"`, `"behaviour":"deferred"`, `"for_seconds":1800`} {
		if !strings.Contains(string(proposed), want) {
			t.Errorf("the proposal's impact %s lacks %s", proposed, want)
		}
	}
	if text := res.Content[0]; !strings.Contains(string(mustJSON(text)), "screen_entity deferred") {
		t.Errorf("the proposal's summary does not say screen_entity is deferred: %s", mustJSON(text))
	}

	ios, _, out, _ := iostreams.Test()
	f := *r.f
	f.IOStreams = ios
	if err := show.Run(context.Background(), &f, &show.Options{ID: doc["request_id"].(string), Output: "json"}); err != nil {
		t.Fatal(err)
	}
	var shown map[string]any
	if err := json.Unmarshal(out.Bytes(), &shown); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, _ := json.Marshal(shown["impact"])
	if !bytes.Equal(got, proposed) {
		t.Errorf("request show's impact\n%s\nwant the proposal's\n%s", got, proposed)
	}
}
