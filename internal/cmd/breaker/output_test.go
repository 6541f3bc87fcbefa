package breaker_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// --jq filters the JSON document of any structured command; strings print
// unquoted, other values as compact JSON, one result a line.
func TestJQFiltersStructuredOutput(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	e.MustRun(0, "breaker", "force-open", "screening-sim", "--reason", "sim down", "--for", "1h")

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"breaker", "list", "--jq", ".items[].dependency"}, "openai\nscreening-sim\n"},
		{[]string{"breaker", "list", "--jq", ".items | length"}, "2\n"},
		{[]string{"breaker", "list", "-o", "json", "--jq", `.items[] | select(.dependency == "openai") | {dependency, version}`},
			`{"dependency":"openai","version":1}` + "\n"},
		{[]string{"breaker", "get", "openai", "--jq", ".expires_in_seconds"}, "1800\n"},
		{[]string{"audit", "list", "--jq", ".items[0].action"}, "breaker.force-open\n"},
		{[]string{"version", "--jq", ".version | type"}, "string\n"},
		// The process environment is never visible to an expression.
		{[]string{"breaker", "list", "--jq", "$ENV.KOSHACTL_ACTOR, env.HOME"}, "null\nnull\n"},
	}
	for _, tc := range cases {
		r := e.MustRun(0, tc.args...)
		if r.Stdout != tc.want {
			t.Errorf("koshactl %s:\n got %q\nwant %q", strings.Join(tc.args, " "), r.Stdout, tc.want)
		}
	}

	// Bad use is a usage error before anything runs.
	for _, args := range [][]string{
		{"breaker", "list", "-o", "yaml", "--jq", ".items"},
		{"breaker", "list", "--jq", ".items["},
		{"breaker", "list", "--jq", " "},
		{"breaker", "clear", "openai", "-o", "table", "--jq", ".results"},
	} {
		r := e.MustRun(exitcode.Usage, args...)
		if r.Stdout != "" || !strings.Contains(r.Stderr, "--jq") || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("koshactl %s: want one usage line naming --jq, got stdout %q stderr %q", strings.Join(args, " "), r.Stdout, r.Stderr)
		}
	}
	// clear -o table --jq was refused: the override is still there.
	if got := e.MustRun(0, "breaker", "list", "--jq", ".items | length").Stdout; got != "2\n" {
		t.Errorf("a refused command changed the store: %q", got)
	}
	// A runtime error prints nothing on stdout and exits non-zero.
	r := e.Run("breaker", "list", "--jq", ".items[] | error(\"boom\")")
	if r.Code == 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "boom") {
		t.Errorf("jq runtime error: code %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}

// --no-headers drops the header line of tables, leaving the rows.
func TestNoHeadersDropsTableHeaders(t *testing.T) {
	t.Parallel()
	e := clitest.New(t, clitest.Parallel())
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	with := e.MustRun(0, "breaker", "list").Stdout
	without := e.MustRun(0, "breaker", "list", "--no-headers").Stdout
	if !strings.HasPrefix(with, "DEPENDENCY") || strings.Count(with, "\n") != 2 {
		t.Fatalf("breaker list:\n%s", with)
	}
	if strings.Contains(without, "DEPENDENCY") || strings.Count(without, "\n") != 1 || !strings.HasPrefix(without, "openai ") {
		t.Fatalf("breaker list --no-headers:\n%s", without)
	}
	e.MustRun(0, "ratelimit", "drain", "--create", "agent-1", "--reason", "test")
	for _, args := range [][]string{{"audit", "list"}, {"config", "get-contexts"}, {"drill", "kinds"}, {"ratelimit", "list"}} {
		full := fieldLines(e.MustRun(0, args...).Stdout)
		bare := fieldLines(e.MustRun(0, append(args, "--no-headers")...).Stdout)
		var rows []string
		for _, l := range full {
			if l != strings.ToUpper(l) { // header lines are all capitals
				rows = append(rows, l)
			}
		}
		if len(rows) == 0 || len(rows) >= len(full) || strings.Join(bare, "\n") != strings.Join(rows, "\n") {
			t.Errorf("koshactl %s --no-headers should print the rows without the headers:\n%s\nfull:\n%s",
				strings.Join(args, " "), strings.Join(bare, "\n"), strings.Join(full, "\n"))
		}
	}
}

// fieldLines returns the non-empty lines of a table with their columns
// joined by one space (alignment depends on the widest cell, headers too).
func fieldLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}
