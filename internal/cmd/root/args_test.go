package root_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// groups returns the path (without "koshactl") of every command group in
// the tree, the root included, with one of its subcommands' names.
func groups(t *testing.T) map[string]string {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	started := false
	out := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				out[strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), "koshactl"))] = sub.Name()
			}
			walk(sub)
		}
	}
	walk(root.NewCmd(factory.NewWith(ios, clocktest.NewFake(clock.Real{}.Now())), &started))
	if len(out) < 8 {
		t.Fatalf("found only %d command groups: %v", len(out), out)
	}
	return out
}

// typo drops the second letter of name: list → lst, status → sttus.
func typo(name string) string { return name[:1] + name[2:] }

// TestUnknownSubcommandOfEveryGroupExits2: issue 21. `koshactl breaker lst`
// printed the help and exited 0, so a script carried on. Every group refuses
// an unknown subcommand with exit 2, and suggests the closest one on a line
// of its own.
func TestUnknownSubcommandOfEveryGroupExits2(t *testing.T) {
	e := clitest.New(t)
	for path, sub := range groups(t) {
		args := strings.Fields(path)
		r := e.MustRun(exitcode.Usage, append(args, typo(sub))...)
		lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], `unknown command "`+typo(sub)+`"`) || !strings.HasPrefix(lines[1], "did you mean ") {
			t.Errorf("koshactl %s %s: stderr %q, want the error and a did-you-mean line", path, typo(sub), r.Stderr)
		}
		if r.Stdout != "" {
			t.Errorf("koshactl %s %s printed to stdout (help?): %q", path, typo(sub), r.Stdout)
		}
		r = e.MustRun(exitcode.Usage, append(args, "zzqqx")...)
		if strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "--help") {
			t.Errorf("koshactl %s zzqqx: stderr %q, want one line pointing at --help", path, r.Stderr)
		}
	}
	// cobra's own completion group too.
	if r := e.MustRun(exitcode.Usage, "completion", "bsh"); !strings.HasSuffix(r.Stderr, "did you mean bash?\n") {
		t.Errorf("completion bsh: stderr %q", r.Stderr)
	}
	e.MustRun(0, "completion", "bash")
	r := e.MustRun(exitcode.Usage, "breaker", "lst")
	if want := "did you mean list?\n"; !strings.HasSuffix(r.Stderr, want) {
		t.Errorf("breaker lst: stderr %q, want it to end %q", r.Stderr, want)
	}
	// An unknown help topic too: cobra printed the root's usage and exited 0.
	for _, tc := range []struct{ args, hint string }{
		{"help lst", ""}, {"help brekaer", "did you mean breaker?"}, {"help breaker lst", "did you mean list?"},
		{"help drill recovr", "did you mean recover?"},
	} {
		r := e.MustRun(exitcode.Usage, strings.Fields(tc.args)...)
		lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
		word := strings.Fields(tc.args)[len(strings.Fields(tc.args))-1]
		if r.Stdout != "" || !strings.Contains(lines[0], `unknown help topic "`+word+`"`) || (tc.hint == "") != (len(lines) == 1) ||
			(tc.hint != "" && lines[len(lines)-1] != tc.hint) {
			t.Errorf("koshactl %s: stdout %q stderr %q, want the error (and %q)", tc.args, r.Stdout, r.Stderr, tc.hint)
		}
	}
	for _, args := range []string{"help", "help breaker", "help breaker list", "help breaker get openai"} {
		if r := e.MustRun(0, strings.Fields(args)...); !strings.Contains(r.Stdout, "Usage:") {
			t.Errorf("koshactl %s: %q", args, r.Stdout)
		}
	}
	if r := e.MustRun(0, "help", "breaker", "list"); !strings.Contains(r.Stdout, "koshactl breaker list") {
		t.Errorf("help breaker list is not list's help: %q", r.Stdout)
	}
	if r := e.MustRun(0, "breaker"); !strings.Contains(r.Stdout, "Available Commands") {
		t.Errorf("a group given nothing still prints its help: %q", r.Stdout)
	}
}

// TestArgumentErrorsSayWhatIsExpected: issue 21. "accepts 1 arg(s),
// received 0" named no fix.
func TestArgumentErrorsSayWhatIsExpected(t *testing.T) {
	e := clitest.New(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"breaker", "get"}, "usage: koshactl breaker get DEPENDENCY"},
		{[]string{"breaker", "get", "a", "b"}, "usage: koshactl breaker get DEPENDENCY"},
		{[]string{"breaker", "force-open", "--reason", "x"}, "usage: koshactl breaker force-open DEPENDENCY..."},
		{[]string{"config", "use-context"}, "usage: koshactl config use-context NAME"},
		{[]string{"config", "set-context"}, "usage: koshactl config set-context NAME"},
		{[]string{"drill", "run"}, "usage: koshactl drill run FILE"},
		{[]string{"drill", "validate"}, "usage: koshactl drill validate FILE..."},
		{[]string{"chaos", "verify", "a", "b"}, "usage: koshactl chaos verify [HEADER | -]"},
		{[]string{"ratelimit", "get"}, "usage: koshactl ratelimit get CLIENT"},
		{[]string{"version", "extra"}, "usage: koshactl version"},
	}
	for _, tc := range cases {
		r := e.MustRun(exitcode.Usage, tc.args...)
		if !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("koshactl %s: stderr %q, want one line with %q", strings.Join(tc.args, " "), r.Stderr, tc.want)
		}
	}
}
