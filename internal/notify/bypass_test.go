package notify_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
)

// A bypass record is the table's text, written by whoever could write the
// table: its actor, reason, subject and id reach every chat form escaped
// (controls, bidi marks, mentions, links), and the JSON form as recorded.
// The record's actor did not send the notification: a failed delivery is
// recorded under the reporter's name, never under the bypasser's.
func TestBypassedEventEscapesTheRecordAndBlamesNoOneForItsFailure(t *testing.T) {
	rec := audit.Record{ID: "0123456789abcdef", Time: epoch.Add(-time.Minute), Actor: "mallory\x1b[2J <!here>\u202e",
		Action: "breaker.force-open", Subject: "breaker#openai <@U123>", Reason: hostile + "\nline two"}
	ev := notify.BypassedEvent(rec, epoch.Add(-time.Hour), "arn:aws:sts::123456789012:assumed-role/ci/detector")

	chat, hook, refuse := notifytest.Start(t, notifytest.Accept), notifytest.Start(t, notifytest.Accept), notifytest.Start(t, notifytest.Refuse)
	failures := &recorder{}
	d := &notify.Dispatcher{Context: "prod", Source: notify.SourceCLI, Clock: clocktest.NewFake(epoch), Audit: failures,
		Sinks: []notify.Sink{&notify.Webhook{SinkName: "chat", URL: chat.URL(), Format: notify.FormatSlack},
			&notify.Webhook{SinkName: "hook", URL: hook.URL()}, &notify.Webhook{SinkName: "down", URL: refuse.URL()}}}
	rep := d.Notify(t.Context(), ev)
	if len(rep.Delivered) != 2 || len(rep.Failed) != 1 {
		t.Fatalf("report = %+v", rep)
	}

	text := chat.SlackTexts(t)[0]
	slackSafe(t, text)
	for _, want := range []string{
		`[prod] policy.bypassed by mallory\x1b[2J &lt;!here&gt;\u202e: breaker#openai &lt;@U123&gt;`,
		"&lt;!channel&gt; @here see &lt;http://evil.example|the runbook&gt;", `\nline two`, "Outcome: unapproved",
		"Detail: audit record 0123456789abcdef: breaker.force-open of breaker#openai &lt;@U123&gt; at 2026-11-29T18:59:00Z carries no approval, " +
			"though the table has had a change policy since 2026-11-29T18:00:00Z",
		"found by arn:aws:sts::123456789012:assumed-role/ci/detector",
		"Lever: breaker#openai &lt;@U123&gt; breaker.force-open without an approval", "Audit records: 0123456789abcdef",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Slack message lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\x1b\u202e") {
		t.Errorf("a control or bidi character reaches Slack:\n%q", text)
	}
	in, err := notify.SNSPublishInput(topic, rep.Event)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Content  struct{ Title, Description string }
		Metadata struct{ Summary string }
	}
	if err := json.Unmarshal([]byte(*in.Message), &msg); err != nil {
		t.Fatal(err)
	}
	for _, shown := range []string{*in.Subject, msg.Content.Title, msg.Content.Description, msg.Metadata.Summary} {
		slackSafe(t, shown)
		if strings.ContainsAny(shown, "\x1b\u202e") || !strings.Contains(shown, "breaker#openai &lt;@U123&gt;") {
			t.Errorf("SNS shows %q", shown)
		}
	}

	got := hook.Events(t)[0]
	if got.Action != notify.ActionPolicyBypassed || got.Actor != rec.Actor || got.Reason != rec.Reason || got.Outcome != "unapproved" ||
		strings.Join(got.AuditIDs, ",") != rec.ID || got.Levers[0].Subject != rec.Subject {
		t.Errorf("JSON payload %+v, want the record's values as recorded", got)
	}
	if len(failures.entries) != 1 || failures.entries[0].Action != notify.ActionFailed ||
		failures.entries[0].Actor != "arn:aws:sts::123456789012:assumed-role/ci/detector" {
		t.Errorf("failure records %+v, want one by the reporter", failures.entries)
	}
}
