package drill_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/report"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/gameday"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// gameDayReport is what a reviewer reads first in a report: the at-a-glance
// lines (label → text), and the text of the timeline.
type gameDayReport struct {
	glance   map[string]string
	timeline string
	gauges   string
	text     string
}

// parseReport parses an HTML report and checks what every report must be:
// one CSP (the renderer's), no script or URL, every step and rollback of
// the journal in its tables and on its timeline.
func parseReport(t *testing.T, page string, j drill.Journal) gameDayReport {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	r := gameDayReport{glance: map[string]string{}}
	var walk func(n *html.Node, f func(*html.Node))
	walk = func(n *html.Node, f func(*html.Node)) {
		f(n)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, f)
		}
	}
	text := func(n *html.Node) string {
		var b strings.Builder
		walk(n, func(c *html.Node) {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		})
		return b.String()
	}
	attr := func(n *html.Node, k string) string {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val
			}
		}
		return ""
	}
	var svgs []string
	csp, steps, levers := "", map[string]bool{}, map[string]bool{}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "script", "img", "a", "iframe", "link":
			t.Errorf("the report has a <%s> element", n.Data)
		case "meta":
			if attr(n, "http-equiv") == "Content-Security-Policy" {
				csp = attr(n, "content")
			}
		case "svg":
			svgs = append(svgs, text(n))
		case "dt":
			if n.Parent != nil && attr(n.Parent, "id") == "glance" && n.NextSibling != nil {
				r.glance[text(n)] = text(n.NextSibling)
			}
		case "tr":
			if id := attr(n, "data-step"); id != "" {
				steps[id] = true
			}
			if id := attr(n, "data-rollback"); id != "" {
				levers[id] = true
			}
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "href" || a.Key == "src" || a.Key == "style" {
				t.Errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
			}
		}
	})
	if csp != gameday.CSP {
		t.Errorf("CSP = %q", csp)
	}
	if len(svgs) == 0 {
		t.Fatal("the report has no timeline")
	}
	r.timeline = svgs[0]
	if len(svgs) > 1 {
		r.gauges = svgs[1]
	}
	r.text = text(doc)
	for _, s := range j.Steps {
		if !steps[s.ID] || !strings.Contains(r.timeline, s.ID) {
			t.Errorf("step %s: in the table %v, on the timeline %v", s.ID, steps[s.ID], strings.Contains(r.timeline, s.ID))
		}
	}
	for _, rb := range j.Rollbacks {
		if !levers[rb.ID] || !strings.Contains(r.timeline, rb.ID+" "+rb.Subject) {
			t.Errorf("rollback %s: in the table %v, on the timeline %v", rb.ID, levers[rb.ID], strings.Contains(r.timeline, rb.ID))
		}
	}
	return r
}

// wantGlance checks that the at-a-glance line label holds each of wants.
func (r gameDayReport) wantGlance(t *testing.T, label string, wants ...string) {
	t.Helper()
	got, ok := r.glance[label]
	if !ok {
		t.Errorf("no %q line at a glance: %v", label, r.glance)
		return
	}
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q lacks %q", label, got, w)
		}
	}
}

// assertStoppedReport: the report of the alarm-stopped run says at a
// glance what was pulled and for how long, which alarm stopped it (name,
// state reason, time) and when everything was put back.
func assertStoppedReport(t *testing.T, page string, j drill.Journal) {
	t.Helper()
	r := parseReport(t, page, j)
	var pulled []string
	for _, rb := range j.Rollbacks {
		pulled = append(pulled, rb.Subject+" for ")
	}
	r.wantGlance(t, "Pulled", pulled...)
	r.wantGlance(t, "Stopped by", "stop condition "+j.Stop.Condition+" at "+j.Stop.At.UTC().Format("15:04:05.000Z"),
		"alarm kosha-api-5xx ALARM: Threshold Crossed: 3 datapoints > 1")
	last := j.Rollbacks[0].EndedAt
	for _, rb := range j.Rollbacks {
		if rb.EndedAt.After(*last) {
			last = rb.EndedAt
		}
	}
	r.wantGlance(t, "Put back", fmt.Sprintf("all %d by %s", len(j.Rollbacks), last.UTC().Format("15:04:05.000Z")), "by the run's rollback")
	if !strings.Contains(r.timeline, "stopped: "+j.Stop.Condition) || !strings.Contains(r.timeline, "soak") {
		t.Errorf("the timeline does not show the stop: %s", r.timeline)
	}
	// The run recorded the stop condition's evaluations and the gauges it
	// polled, and the audit ids of its changes.
	if len(j.StopEvaluations) == 0 || !j.StopEvaluations[len(j.StopEvaluations)-1].Holds || len(j.GaugeSamples) == 0 || len(j.Audit) < 4 {
		t.Errorf("journal: %d stop evaluations, %d gauge samples, %d audit refs", len(j.StopEvaluations), len(j.GaugeSamples), len(j.Audit))
	}
	if !strings.Contains(r.gauges, "openai") {
		t.Errorf("no breaker state chart of openai: %q", r.gauges)
	}
	for _, a := range j.Audit {
		if !strings.Contains(r.text, a.ID) {
			t.Errorf("audit id %s is not in the report", a.ID)
		}
	}
}

// assertRecoveredReport: the report of the SIGKILLed run, after drill
// recover, says the process died, what was pulled, and that drill recover
// put everything back, when and by whom.
func assertRecoveredReport(t *testing.T, j drill.Journal, jpath string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.NewWith(ios, clock.Real{})
	if err := report.Run(context.Background(), f, &report.Options{Journal: jpath, Output: gameday.FormatHTML, NoFetch: true}); err != nil {
		t.Fatalf("drill report: %v\n%s", err, errOut)
	}
	r := parseReport(t, out.String(), j)
	var pulled []string
	for _, rb := range j.Rollbacks {
		pulled = append(pulled, rb.Subject+" for ")
	}
	r.wantGlance(t, "Pulled", pulled...)
	r.wantGlance(t, "Stopped by", "the run's process died")
	rv := j.Recoveries[0]
	r.wantGlance(t, "Put back", fmt.Sprintf("all %d by ", len(j.Rollbacks)), "drill recover by "+rv.Actor)
	if !strings.Contains(r.timeline, "recovered") || !strings.Contains(r.timeline, "died (last record)") {
		t.Errorf("the timeline does not show the death and the recovery: %s", r.timeline)
	}
	var md strings.Builder
	if err := gameday.Markdown(&md, gameday.Input{Journal: &j}); err != nil || !strings.Contains(md.String(), "drill recover by") {
		t.Errorf("markdown: %v\n%s", err, md.String())
	}
}
