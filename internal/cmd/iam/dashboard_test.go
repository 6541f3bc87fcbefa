package iam_test

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmd/dashboard"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/testutil/vtterm"
	"github.com/kosha-platform/koshactl/internal/testutil/wait"
)

// The dashboard under the reader's policy: its refresh reads the known
// dependencies' overrides with the table's policy item in one batch read,
// and the gauges, and shows them, denied nothing; it calls exactly what
// iam.Commands() declares for "dashboard". (The reader's batch-read
// statement named breaker# and not policy#: AWS denied the whole batch.)
func TestDashboardRefreshesUnderTheReadersPolicy(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	w.MustRun(0, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m")
	w.cw.Put("openai", "gw-1", w.Clock.Now().Add(-30*time.Second), 0) // closed: "forced" is the override's
	w.asRole(t, iam.Reader)
	w.rec.take()
	errOut := runDashboard(t, w, func(term *vtterm.Terminal) { term.WaitFor(t, "openai", "forced", "core-api") })
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("the reader's dashboard was denied %v", d)
	}
	if d := sameNeeds(append(w.rec.take(), debugNeeds(errOut)...), iam.Commands()["dashboard"]); d != "" {
		t.Errorf("koshactl dashboard: %s", d)
	}
}

// The dashboard's requests pane under the reader's policy: it reads what
// request list reads (the lists index, then the requests with their
// proofs and closed markers in one batch read), never a scan, and is
// denied nothing.
func TestDashboardRequestsPaneUnderTheReadersPolicy(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	w.MustRun(0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "iam test")
	w.MustRun(exitcode.Pending, "breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m")
	w.asRole(t, iam.Reader)
	w.rec.take()
	errOut := runDashboard(t, w, func(term *vtterm.Terminal) {
		term.WaitFor(t, "openai", "core-api")
		term.Press("p")
		term.WaitFor(t, "Pending change requests", "force open openai")
	})
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("the reader's requests pane was denied %v", d)
	}
	declared := append(slices.Clone(iam.Commands()["dashboard"]), iam.Commands()["request list"]...)
	for _, n := range append(w.rec.take(), debugNeeds(errOut)...) {
		if n.Action == iam.Scan || !slices.Contains(declared, n) {
			t.Errorf("the dashboard with its requests pane called %s: a scan, or not what dashboard and request list declare", n)
		}
	}
}

// gaugesAnswered is the dashboard's header line ("store … · gauges <source>
// <freshness> · every 1m") once its gauge read has ended, answered or
// failed: the freshness is no longer "loading…".
var gaugesAnswered = regexp.MustCompile(`gauges [^·\n]*(ago|FAILED|STALE) · every `)

// runDashboard runs the dashboard on w's factory, with --debug so that its
// calls are logged, lets drive work the screen, quits it with q once the
// gauges have answered, and returns what it wrote to stderr.
func runDashboard(t *testing.T, w *awsWorld, drive func(term *vtterm.Terminal)) string {
	t.Helper()
	term, ios, errOut := vtterm.New(t)
	f := w.Factory(ios)
	f.Debug = true
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute}) }()
	drive(term)
	// The rows show once the store has answered; the gauges are read beside
	// it and may answer later. Quit only once they have (or failed): a q
	// before leaves their call unmade or its --debug line unwritten, or
	// written to stderr while the test reads it.
	term.WaitForMatch(t, gaugesAnswered)
	term.Press("q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dashboard ended with %v\n%s", err, errOut.String())
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("q did not end the dashboard")
	}
	return errOut.String()
}
