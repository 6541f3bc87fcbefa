package root_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/iostreams"
)

// run runs args through root.Run on fresh streams.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWith(t, root.Run, args...)
}

// runWhole runs args through the whole tree on fresh streams.
func runWhole(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWith(t, root.RunWholeTree, args...)
}

func runWith(t *testing.T, runner func(context.Context, *cmdenv.Factory, []string) int, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.NewWith(ios, clocktest.NewFake(clock.Real{}.Now()))
	code = runner(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// commandPaths is every command's path below the root of the whole tree.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	var started bool
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(append([]string(nil), path...), sub.Name())
			paths = append(paths, p)
			walk(sub, p)
		}
	}
	walk(root.NewCmd(factory.NewWith(ios, clock.Real{}), &started), nil)
	if len(paths) < 40 {
		t.Fatalf("the tree has %d commands", len(paths))
	}
	return paths
}

// A command run through the tree Run builds for it (its group alone) prints
// and exits as it does in the whole tree, a global flag before it or not.
func TestOneGroupRunsAsTheWholeTree(t *testing.T) {
	paths := commandPaths(t)
	var cases [][]string
	for _, p := range paths {
		cases = append(cases,
			append(append([]string(nil), p...), "--help"),
			append(append([]string(nil), p...), "--no-such-flag"))
		if len(p) == 1 {
			cases = append(cases, []string{p[0], "no-such-command"}, []string{p[0], p[0][:2]})
		}
	}
	cases = append(cases, []string{"rl", "--help"}, []string{"rl", "get"}, []string{"version"}, []string{"version", "-o", "json"})
	for _, args := range cases {
		code, out, errOut := run(t, append([]string{"--no-color"}, args...)...)
		wcode, wout, werrOut := runWhole(t, args...)
		if len(args) == 2 && args[1] == "--help" && !strings.Contains(out, "Usage:") {
			t.Errorf("koshactl %s: no usage in\n%s", strings.Join(args, " "), out)
		}
		if code != wcode || out != wout || errOut != werrOut {
			t.Errorf("koshactl %s: alone exit %d, stdout\n%s\nstderr\n%s\nin the whole tree exit %d, stdout\n%s\nstderr\n%s",
				strings.Join(args, " "), code, out, errOut, wcode, wout, werrOut)
		}
	}
}

// koshactl version builds only the version command, not the sixty others:
// building the whole tree was a tenth of its run time.
func TestVersionBuildsOnlyItsGroup(t *testing.T) {
	allocs := func(args ...string) float64 {
		return testing.AllocsPerRun(5, func() {
			if code, _, errOut := run(t, args...); code != 0 {
				t.Fatalf("koshactl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
		})
	}
	alone := allocs("version")
	whole := testing.AllocsPerRun(5, func() {
		if code, _, errOut := runWhole(t, "version"); code != 0 {
			t.Fatalf("koshactl version in the whole tree: exit %d: %s", code, errOut)
		}
	})
	if alone*3 > whole {
		t.Errorf("koshactl version allocates %.0f times, the whole tree %.0f: version should build its command alone", alone, whole)
	}
}

// OnRun (where main installs its signal handling) is called once a command's
// own code starts, and only then: not for help, a usage error, or version,
// which is marked as needing none.
func TestOnRunOnlyWhenACommandRuns(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		calls int
	}{
		{[]string{"breaker"}, 1}, // a group's own code prints its help
		{[]string{"--no-color", "breaker"}, 1},
		{[]string{"version"}, 0},
		{[]string{"--no-color", "version"}, 0},
		{[]string{"breaker", "--help"}, 0},
		{[]string{"breaker", "no-such-command"}, 0},
		{[]string{"breaker", "get"}, 0}, // no DEPENDENCY: a usage error
	} {
		ios, _, _, _ := iostreams.Test()
		f := factory.NewWith(ios, clocktest.NewFake(clock.Real{}.Now()))
		calls := 0
		f.OnRun = func() { calls++ }
		root.Run(context.Background(), f, tc.args)
		if calls != tc.calls {
			t.Errorf("koshactl %s: OnRun called %d times, want %d", strings.Join(tc.args, " "), calls, tc.calls)
		}
	}
}
