package tui

import (
	"context"
	"github.com/kosha-platform/koshactl/internal/lever/levertest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/notify/notifytest"
	"github.com/kosha-platform/koshactl/internal/store/sqlite"
)

// The dashboard's levers announce each change as the commands do: one
// notification per force and per clear, after the audit record, from the
// dashboard, escaped for Slack.
func TestDashboardLeversNotifyOncePerChange(t *testing.T) {
	h := newHarness(t, Options{})
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kosha.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rcv := notifytest.Start(t, notifytest.Accept)
	log := audit.NewLog(st, h.clock, "local")
	d := &notify.Dispatcher{Context: "local", Clock: h.clock, Audit: log,
		Sinks: []notify.Sink{&notify.Webhook{SinkName: "chat", URL: rcv.URL(), Format: notify.FormatSlack}}}
	ov := StoreOverrides{Overrides: breaker.NewOverrides(st, h.clock),
		Levers:   levertest.Levers(st, h.clock, log).WithActor(func(context.Context) (string, error) { return "op@dash", nil }),
		Known:    []string{"core-api", "openai", "postgres", "screening-sim"},
		Notifier: d.For(notify.SourceDashboard, nil)}
	m := New(Deps{Overrides: ov, Gauges: h.gauges, Audit: log}, Options{ContextName: "local", StoreName: "sqlite",
		Dependencies: ov.Known, Clock: h.clock})
	m.tick = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	h.m = m
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.run(h.m.Init())

	reason := "<!channel> see <http://evil.example|runbook>"
	h.press("f")
	h.typeText(reason)
	h.press("enter", "enter")
	h.wantScreen("core-api forced open for 1h")
	h.press("c")
	h.typeText("over & out")
	h.press("enter")
	h.wantScreen("core-api cleared")

	texts := rcv.SlackTexts(t)
	if len(texts) != 2 {
		t.Fatalf("got %d notifications, want one per change (2)", len(texts))
	}
	for i, want := range []string{
		"[local] breaker.force-open by op@dash: breaker#core-api",
		"[local] breaker.clear by op@dash: breaker#core-api",
	} {
		if !strings.Contains(texts[i], want) || !strings.Contains(texts[i], "(from the dashboard)") || strings.ContainsAny(texts[i], "<>") {
			t.Errorf("notification %d:\n%s", i, texts[i])
		}
	}
	if !strings.Contains(texts[0], "&lt;!channel&gt; see &lt;http://evil.example|runbook&gt;") || !strings.Contains(texts[1], "over &amp; out") {
		t.Errorf("reasons not escaped:\n%s\n%s", texts[0], texts[1])
	}
	recs, err := log.List(context.Background(), audit.Query{Subject: breaker.OverrideKey("core-api")})
	if err != nil || len(recs.Records) != 2 {
		t.Fatalf("audit = %+v, %v", recs, err)
	}
	// Each notification names its change's audit record.
	for _, rec := range recs.Records {
		i := map[string]int{breaker.ActionForceOpen: 0, breaker.ActionClear: 1}[rec.Action]
		if !strings.Contains(texts[i], "Audit records: "+rec.ID) {
			t.Errorf("notification %d does not name %s's audit record %s:\n%s", i, rec.Action, rec.ID, texts[i])
		}
	}
}
