package request_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// impactOf is the impact section of a command's JSON, as written.
type impactOf struct {
	Impact json.RawMessage `json:"impact"`
}

// A force the table's policy turns into a request shows its impact to the
// requester, in the request's notification, and to the person who
// approves it (request show, told again from the change the request's
// hash covers): the same tools, the same behaviour.
func TestRequestCarriesTheImpactOfItsForce(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	rcv := notifytest.Start(t, notifytest.Accept)
	e.WriteConfig("current-context: ops\ncontexts:\n  ops:\n    store: {local: {}}\n    notify:\n      - webhook: {url: " + rcv.URL() + "}\n")
	e.MustRun(0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")

	r := e.MustRun(exitcode.Pending, "breaker", "force-open", "screening-sim", "--reason", "screenings slow", "--for", "30m", "-o", "json")
	req := clitest.Decode[struct {
		RequestID string `json:"request_id"`
		impactOf
	}](t, r.Stdout)
	for _, want := range []string{`"tool":"screen_entity"`, `"behaviour":"deferred"`, `"for_seconds":1800`} {
		if !bytes.Contains(compact(t, req.Impact), []byte(want)) {
			t.Errorf("the request's result's impact %s lacks %s", req.Impact, want)
		}
	}
	table := e.MustRun(exitcode.Pending, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m").Stdout
	if !strings.Contains(table, "impact of forcing openai for 30m") || !strings.Contains(table, "search_knowledge_base") {
		t.Errorf("the request's table shows no impact:\n%s", table)
	}

	shown := clitest.Decode[impactOf](t, e.MustRun(0, "request", "show", req.RequestID, "-o", "json").Stdout)
	if !bytes.Equal(compact(t, shown.Impact), compact(t, req.Impact)) {
		t.Errorf("request show's impact\n%s\nwant the requester's\n%s", shown.Impact, req.Impact)
	}
	if out := e.MustRun(0, "request", "show", req.RequestID).Stdout; !strings.Contains(out, "screen_entity  deferred") {
		t.Errorf("request show's table shows no impact:\n%s", out)
	}

	var found bool
	for _, ev := range rcv.Events(t) {
		if ev.Action == "request.create" && strings.Contains(strings.Join(ev.Impact, "\n"), "screen_entity deferred") {
			found = true
		}
	}
	if !found {
		t.Errorf("no request notification says screen_entity is deferred: %+v", rcv.Events(t))
	}
}

// On a protected context the prompt shows what the force does before it
// asks for the context's name.
func TestProtectedPromptShowsTheImpact(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.WriteConfig("current-context: prod\ncontexts:\n  prod:\n    store: {local: {}}\n    protected: true\n")
	e.TTY, e.Stdin = true, "prod\n"
	r := e.MustRun(0, "breaker", "force-open", "core-api", "--reason", "failover drill", "--for", "15m")
	prompt := strings.Index(r.Stderr, "PROTECTED")
	shown := strings.Index(r.Stderr, "raise_dispute failed")
	if prompt < 0 || shown < 0 || shown > prompt {
		t.Errorf("the prompt does not show the impact before it asks:\n%s", r.Stderr)
	}
}

func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return b.Bytes()
}
