package apply_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// While the fleet is frozen a due window is held, the freeze named; a
// window already open still lapses, and apply's clear of it is not
// blocked; after the lift the due window opens.
func TestApplyOpensNoWindowWhileFrozen(t *testing.T) {
	t.Parallel()
	e, _, path := newEnv(t)
	window(t, path, "maintenance", clitest.Epoch.Add(-time.Minute), 30*time.Minute)
	e.MustRun(0, "freeze", "--reason", "real incident", "--ref", "INC-7", "--for", "1h")

	r := e.MustRun(0, "apply", "-f", path)
	if !strings.Contains(r.Stdout, "held") || !strings.Contains(r.Stdout, "INC-7") {
		t.Errorf("apply while frozen does not say the window is held by the freeze:\n%s", r.Stdout)
	}
	if _, ok := get(t, e, "postgres"); ok {
		t.Fatal("a window was opened while the fleet was frozen")
	}

	e.MustRun(0, "freeze", "lift", "--reason", "not us")
	e.MustRun(0, "apply", "-f", path)
	if _, ok := get(t, e, "postgres"); !ok {
		t.Fatal("the due window did not open after the lift")
	}

	// Open, then frozen again: the window's end still clears it.
	e.MustRun(0, "freeze", "--reason", "second incident", "--for", "1h")
	if err := removeWindows(path); err != nil {
		t.Fatal(err)
	}
	e.MustRun(0, "apply", "-f", path)
	if _, ok := get(t, e, "postgres"); ok {
		t.Error("the window removed from the file was not cleared while frozen")
	}
}

// removeWindows rewrites the levers file at path with no window: every
// override it manages is to be cleared.
func removeWindows(path string) error {
	return os.WriteFile(path, []byte("version: 1\ncontext: local\nname: maintenance\nwindows: []\n"), 0o600)
}

// A window open when the fleet is frozen still lapses at its end (its
// override expires on its own; apply neither holds nor rewrites it), and
// the next round writes nothing.
func TestAWindowOpenBeforeAFreezeLapsesAtItsEnd(t *testing.T) {
	t.Parallel()
	e, _, path := newEnv(t)
	window(t, path, "maintenance", clitest.Epoch.Add(-time.Minute), 10*time.Minute)
	e.MustRun(0, "apply", "-f", path)
	if _, ok := get(t, e, "postgres"); !ok {
		t.Fatal("the due window did not open")
	}
	e.MustRun(0, "freeze", "--reason", "real incident", "--ref", "INC-8", "--for", "1h")
	if r := e.MustRun(0, "apply", "-f", path); strings.Contains(r.Stdout, "held") {
		t.Errorf("apply while frozen holds the window already open:\n%s", r.Stdout)
	}
	if o, ok := get(t, e, "postgres"); !ok || !o.Active {
		t.Fatalf("the open window was taken down by the freeze: %+v", o)
	}

	e.Clock.Advance(10 * time.Minute)
	if o, ok := get(t, e, "postgres"); ok && o.Active {
		t.Errorf("the window did not lapse at its end while frozen: %+v", o)
	}
	e.MustRun(0, "apply", "-f", path)
	recs := e.MustRun(0, "audit", "list", "--subject", "breaker#postgres", "-o", "json").Stdout
	if n := strings.Count(recs, "breaker.force-open"); n != 1 {
		t.Errorf("%d forces of postgres recorded, want the window's one:\n%s", n, recs)
	}
}
