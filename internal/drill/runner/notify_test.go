package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
)

// A drill announces its start when the steps begin and its end after the
// rollbacks: the levers as the rollbacks left them and every audit record
// the run wrote.
func TestRunAnnouncesItsStartAndItsEnd(t *testing.T) {
	e := newEnv(t)
	rcv := notifytest.Start(t, notifytest.Accept)
	r := &Runner{Deps: e.Deps, Notifier: &notify.Dispatcher{Context: "test", Clock: e.Clock,
		Sinks: []notify.Sink{&notify.Webhook{SinkName: "hook", URL: rcv.URL()}}}}
	j := r.Run(context.Background(), parse(t, outageDrill))
	if j.Outcome != drill.OutcomePassed {
		t.Fatalf("outcome %s: %s", j.Outcome, j.Reason)
	}
	evs := rcv.Events(t)
	if len(evs) != 2 || evs[0].Action != notify.ActionDrillStarted || evs[1].Action != notify.ActionDrillFinished {
		t.Fatalf("events = %+v", evs)
	}
	for _, ev := range evs {
		if ev.Source != notify.SourceDrill || ev.Actor != "tester@test" || ev.Drill == nil || ev.Drill.RunID != j.RunID ||
			ev.Reason != "drill openai-outage run "+j.RunID {
			t.Fatalf("event %+v", ev)
		}
	}
	end := evs[1]
	if end.Outcome != drill.OutcomePassed || len(end.Levers) != 1 || end.Levers[0].Subject != "breaker#openai" ||
		end.Levers[0].Change != "moved by the drill, rolled back" || !strings.Contains(end.Detail, "1 of 1 rollback ok") {
		t.Fatalf("end = %+v", end)
	}
	var ids []string
	for _, rec := range e.auditRecords() {
		ids = append(ids, rec.ID)
	}
	slices.Sort(ids)
	got := slices.Clone(end.AuditIDs)
	slices.Sort(got)
	if len(ids) == 0 || !slices.Equal(got, ids) {
		t.Fatalf("end names audit ids %v, the run wrote %v", got, ids)
	}
}

// slackRecorder is an in-process webhook receiver (no socket, so it runs
// inside a synctest bubble) that keeps each Slack message's text.
type slackRecorder struct {
	mu    sync.Mutex
	texts []string
}

func (s *slackRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	var m struct {
		Blocks []struct{ Text struct{ Text string } }
	}
	_ = json.Unmarshal(body, &m)
	text := ""
	for _, b := range m.Blocks {
		text += b.Text.Text + "\n"
	}
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.mu.Unlock()
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Header: http.Header{}, Request: req}, nil
}

// A stop condition is announced when it holds, before the rollbacks, and
// its hostile name stays text in Slack.
func TestAStopIsAnnouncedEscaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &slackRecorder{}
		r := &Runner{Deps: e.Deps, Notifier: &notify.Dispatcher{Context: "test", Clock: e.Clock,
			Sinks: []notify.Sink{&notify.Webhook{SinkName: "chat", URL: "https://hooks.example.com/x", Format: notify.FormatSlack,
				Client: &http.Client{Transport: rec}}}}}
		d := parse(t, `
name: stop
timeout: 10m
poll_interval: 200ms
metrics_url: ${env.FLEET}/metrics
stop_conditions:
  - name: "core-api <!channel> opened"
    breaker: {dependency: core-api, state: [open, forced_open], instances: any}
steps:
  - breaker.force-open: {dependency: openai}
  - id: wait
    sleep: 5m
`)
		go func() {
			time.Sleep(1100 * time.Millisecond)
			e.Fleet.Set("core-api", gauge.Open)
		}()
		j := r.Run(context.Background(), d)
		if j.Outcome != drill.OutcomeStopped {
			t.Fatalf("outcome %s", j.Outcome)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.texts) != 3 {
			t.Fatalf("got %d notifications (want started, stopped, finished):\n%s", len(rec.texts), strings.Join(rec.texts, "\n---\n"))
		}
		stopped := rec.texts[1]
		if !strings.Contains(stopped, "drill.stopped") || !strings.Contains(stopped, "core-api &lt;!channel&gt; opened") ||
			strings.ContainsAny(stopped, "<>") || !strings.Contains(stopped, "Lever: breaker#openai moved by the drill") {
			t.Fatalf("stopped:\n%s", stopped)
		}
		if !strings.Contains(rec.texts[2], "Outcome: stopped") || !strings.Contains(rec.texts[2], "rolled back") {
			t.Fatalf("finished:\n%s", rec.texts[2])
		}
	})
}

// drill recover announces the recovery after its audit record, naming it
// and each lever it recovered.
func TestRecoveryIsAnnounced(t *testing.T) {
	e := newEnv(t)
	j := abandonedRun(t, e, twoLevers)
	rcv := notifytest.Start(t, notifytest.Accept)
	rv := &Recovery{Deps: e.Deps, Trail: e.Audit, Notifier: &notify.Dispatcher{Context: "test", Clock: e.Clock,
		Sinks: []notify.Sink{&notify.Webhook{SinkName: "hook", URL: rcv.URL()}}}}
	if rec, err := rv.Run(context.Background(), j); err != nil || rec == nil || !rec.OK {
		t.Fatalf("recovery = %+v, %v", rec, err)
	}
	evs := rcv.Events(t)
	if len(evs) != 1 || evs[0].Action != notify.ActionDrillRecovered || evs[0].Outcome != "ok" || len(evs[0].Levers) != 3 || len(evs[0].AuditIDs) == 0 {
		t.Fatalf("events = %+v", evs)
	}
	var recoverID string
	for _, r := range e.auditRecords() {
		if r.Action == ActionRecover {
			recoverID = r.ID
		}
	}
	if !slices.Contains(evs[0].AuditIDs, recoverID) {
		t.Fatalf("the notification names %v, the recovery's record is %s", evs[0].AuditIDs, recoverID)
	}
	for _, l := range evs[0].Levers {
		if l.Change != "moved by the drill, rolled back" {
			t.Errorf("lever %+v", l)
		}
	}
}
