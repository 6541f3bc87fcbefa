package iam_test

import (
	"context"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/cmd/dashboard"
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
	term, ios, errOut := vtterm.New(t)
	f := w.Factory(ios)
	f.Debug = true
	done := make(chan error, 1)
	go func() { done <- dashboard.Run(context.Background(), f, &dashboard.Options{Interval: time.Minute}) }()
	term.WaitFor(t, "openai", "forced", "core-api")
	term.Press("q")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dashboard ended with %v\n%s", err, errOut.String())
		}
	case <-time.After(wait.Ceiling):
		t.Fatal("q did not end the dashboard")
	}
	if d := w.enf.TakeDenials(); len(d) > 0 {
		t.Errorf("the reader's dashboard was denied %v", d)
	}
	if d := sameNeeds(append(w.rec.take(), debugNeeds(errOut.String())...), iam.Commands()["dashboard"]); d != "" {
		t.Errorf("koshactl dashboard: %s", d)
	}
}
