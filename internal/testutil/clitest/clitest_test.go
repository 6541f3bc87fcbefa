package clitest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// A parallel installation sets no process variable: its CLI alone sees them,
// and Env.Setenv changes one for it only.
func TestParallelKeepsTheEnvironmentOutOfTheProcess(t *testing.T) {
	t.Parallel()
	a, b := clitest.New(t, clitest.Parallel()), clitest.New(t, clitest.Parallel())
	if os.Getenv("KOSHACTL_CONFIG") == a.ConfigPath() || os.Getenv("KOSHACTL_CONFIG") == b.ConfigPath() {
		t.Fatal("New with Parallel set KOSHACTL_CONFIG in the process")
	}
	a.Setenv("KOSHACTL_ACTOR", "alice@test")
	a.MustRun(0, "breaker", "force-open", "openai", "--reason", "a", "--for", "10m")
	b.MustRun(0, "breaker", "force-open", "openai", "--reason", "b", "--for", "10m")
	if out := a.MustRun(0, "audit", "list").Stdout; !strings.Contains(out, "alice@test") || strings.Contains(out, "tester@test") {
		t.Errorf("a's audit:\n%s", out)
	}
	if out := b.MustRun(0, "audit", "list").Stdout; !strings.Contains(out, "tester@test") || strings.Contains(out, "alice@test") {
		t.Errorf("b's audit (its own store, its own actor):\n%s", out)
	}
}

// Without Parallel, a variable the test sets with t.Setenv after New wins,
// as it did when New only set process variables.
func TestSetenvAfterNewReachesTheCLI(t *testing.T) {
	e := clitest.New(t)
	if os.Getenv("KOSHACTL_CONFIG") != e.ConfigPath() {
		t.Fatal("New without Parallel did not set KOSHACTL_CONFIG in the process")
	}
	t.Setenv("KOSHACTL_ACTOR", "bob@test")
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "a", "--for", "10m")
	if out := e.MustRun(0, "audit", "list").Stdout; !strings.Contains(out, "bob@test") {
		t.Errorf("audit:\n%s", out)
	}
}
