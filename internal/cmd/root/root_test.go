package root_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/factory"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/termtest"
)

// The streams' backstop: text a command prints without rendering it (here
// shell completion, which prints the config file's dependency names as they
// are) still reaches the terminal only as visible escapes.
func TestEveryStreamIsRenderedByTheBackstop(t *testing.T) {
	e := clitest.New(t)
	e.WriteConfig("contexts:\n  dev:\n    store:\n      local: {}\n    dependencies: [\"open\\e]0;pwned\\a\\u202eai\"]\ncurrent-context: dev\n")
	r := e.MustRun(0, "__complete", "breaker", "get", "")
	termtest.AssertSafe(t, "stdout", r.Stdout)
	termtest.AssertSafe(t, "stderr", r.Stderr)
	if !strings.Contains(r.Stdout, `open\x1b]0;pwned\x07\u202eai`) {
		t.Errorf("the dependency is not shown escaped:\n%s", r.Stdout)
	}
}

// The global output flags reach the streams every command prints through.
func TestGlobalOutputFlags(t *testing.T) {
	cases := []struct {
		args                []string
		color, headers, dbg bool
	}{
		{[]string{"version"}, true, true, false},
		{[]string{"--no-color", "version"}, false, true, false},
		{[]string{"version", "--no-headers"}, true, false, false},
		{[]string{"--debug", "version"}, true, true, true},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ios, _, _, errOut := iostreams.Test()
			ios.SetStdoutTTY(true)
			ios.SetColorEnabled(true)
			f := factory.NewWith(ios, clocktest.NewFake(clock.Real{}.Now()))
			if code := root.Run(context.Background(), f, tc.args); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if ios.ColorEnabled() != tc.color || ios.NoHeaders() == tc.headers || f.Debug != tc.dbg {
				t.Errorf("color %v, headers %v, debug %v; want %v, %v, %v", ios.ColorEnabled(), !ios.NoHeaders(), f.Debug,
					tc.color, tc.headers, tc.dbg)
			}
		})
	}
}

// Issue 45: --request-timeout, global, takes a duration from 1s to 1h; a
// bad one is refused in one line, exit 2, before anything is read. The
// context's request-timeout is checked by the same rule when set.
func TestRequestTimeoutIsChecked(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, v := range []string{"0", "30", "abc", "-1s", "500ms", "2h"} {
		r := e.Run("breaker", "list", "--request-timeout", v)
		if r.Code != 2 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, "--request-timeout") ||
			!strings.Contains(r.Stderr, "give a duration from 1s to 1h") && !strings.Contains(r.Stderr, "is not a duration") {
			t.Errorf("--request-timeout %s: exit %d\n%s", v, r.Code, r.Stderr)
		}
		r = e.Run("config", "set-context", "slow", "--local", "--request-timeout", v)
		if r.Code != 2 || !strings.Contains(r.Stderr, "--request-timeout") {
			t.Errorf("set-context --request-timeout %s: exit %d\n%s", v, r.Code, r.Stderr)
		}
	}
	e.MustRun(0, "--request-timeout", "2m", "breaker", "list")
	e.MustRun(0, "config", "set-context", "slow", "--local", "--request-timeout", "45s")
	if r := e.MustRun(0, "config", "view"); !strings.Contains(r.Stdout, "request-timeout: 45s") {
		t.Errorf("config view does not show the context's request-timeout:\n%s", r.Stdout)
	}
}

// Issue 45: every command's --jq help gave '.items[].dependency' as its
// example, which `request list` (its list is .requests) and most documents
// do not have. The example is one every document answers: keys.
func TestTheJQExampleOfTheHelpWorksOnEveryDocument(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, args := range [][]string{{"request", "list"}, {"breaker", "list"}, {"ratelimit", "list"}, {"audit", "list"}, {"drill", "kinds"}, {"version"}} {
		var flag string
		for _, l := range strings.Split(e.MustRun(0, append(args, "--help")...).Stdout, "\n") {
			if strings.Contains(l, "--jq string") {
				flag = l
			}
		}
		if strings.Contains(flag, ".items") || !strings.Contains(flag, "--jq keys names the document's fields") {
			t.Errorf("%s --help: the --jq example is not keys: %q", strings.Join(args, " "), flag)
		}
		r := e.MustRun(0, append(args, "--jq", "keys")...)
		if !strings.HasPrefix(strings.TrimSpace(r.Stdout), "[") || !strings.Contains(r.Stdout, `"kind"`) && args[0] != "version" {
			t.Errorf("%s --jq keys: %q", strings.Join(args, " "), r.Stdout)
		}
	}
	if r := e.Run("breaker", "list", "--jq", " "); r.Code != 2 || !strings.Contains(r.Stderr, "such as keys") {
		t.Errorf("an empty --jq: exit %d %s", r.Code, r.Stderr)
	}
}

// Issue 45: `--for 48h` was echoed as 2d, which --for did not read back.
// Every duration koshactl writes reads back in every duration flag (and the
// dashboard's prompt): 2d is 48h.
func TestADurationReadsBackAsKoshactlWritesIt(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	for _, typed := range []string{"48h", "2d"} {
		r := e.Run("breaker", "force-open", "openai", "--reason", "x", "--for", typed)
		if r.Code != 2 || !strings.Contains(r.Stderr, "--for 2d is over this context's max-override of 24h") {
			t.Fatalf("--for %s: exit %d %s", typed, r.Code, r.Stderr)
		}
	}
	e.MustRun(0, "config", "set-context", "long", "--local", "--max-override", "3d", "--use")
	if r := e.MustRun(0, "config", "view"); !strings.Contains(r.Stdout, "max-override: 72h") {
		t.Errorf("--max-override 3d was not saved as 72h:\n%s", r.Stdout)
	}
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "x", "--for", "2d4h", "-o", "json", "--jq", ".results[0].override.expires_in_seconds")
	if strings.TrimSpace(r.Stdout) != "187200" {
		t.Errorf("--for 2d4h lasts %s s, want 187200", r.Stdout)
	}
	if r := e.Run("breaker", "force-open", "postgres", "--reason", "x", "--for", "2 days"); r.Code != 2 || !strings.Contains(r.Stderr, "--for") {
		t.Errorf("--for '2 days': exit %d %s", r.Code, r.Stderr)
	}
	// A duration flag's default reads as koshactl writes durations.
	if r := e.MustRun(0, "breaker", "force-open", "--help"); !strings.Contains(r.Stdout, "how long the override lasts (default 1h)") {
		t.Errorf("--for's default is not written 1h:\n%s", r.Stdout)
	}
}

// Issue 45: "1 policies". A count is written with its noun in the number
// it takes.
func TestCountsArePluralisedByTheirNumber(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one.cedar"), filepath.Join(dir, "two.cedar")
	if err := os.WriteFile(one, []byte("@id(\"one\")\npermit (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(two, []byte("@id(\"one\")\npermit (principal, action, resource);\n@id(\"two\")\nforbid (principal, action, resource) when { false };\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := e.MustRun(0, "policy", "set", one, "--reason", "t"); !strings.HasSuffix(strings.TrimSpace(r.Stdout), ", 1 policy") {
		t.Errorf("one policy: %q", r.Stdout)
	}
	if r := e.MustRun(0, "policy", "set", two, "--reason", "t"); !strings.HasSuffix(strings.TrimSpace(r.Stdout), ", 2 policies") {
		t.Errorf("two policies: %q", r.Stdout)
	}
}
