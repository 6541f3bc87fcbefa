package cmdutil_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// jqFormat parses args on a command with the output flag and returns the
// format it ends with.
func jqFormat(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var format string
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cmdutil.AddOutputFlag(cmd, &format)
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	return format, err
}

func TestJQPrintsStringsPlainAndRendersUnsafeOnes(t *testing.T) {
	doc := map[string]any{
		"plain": "provider incident see #ops",
		"tab":   "a\tb",
		"evil":  "ok\x1b[2J\u202egnp.exe\r",
		"big":   int64(1) << 62,
		"list":  []string{"a", "b"},
	}
	cases := map[string]string{
		".plain":   "provider incident see #ops\n",
		".tab":     textsafe.Line("a\tb") + "\n",
		".evil":    textsafe.Line("ok\x1b[2J\u202egnp.exe\r") + "\n",
		".big":     "4611686018427387904\n",
		".list":    `["a","b"]` + "\n",
		".list[]":  "a\nb\n",
		".nothing": "null\n",
		"empty":    "",
	}
	for expr, want := range cases {
		format, err := jqFormat(t, "--jq", expr)
		if err != nil {
			t.Fatalf("--jq %s: %v", expr, err)
		}
		if !cmdutil.IsJSON(format) {
			t.Fatalf("--jq %s: format %q is not JSON", expr, format)
		}
		var out bytes.Buffer
		if err := cmdutil.PrintStructured(&out, format, doc); err != nil {
			t.Fatalf("--jq %s: %v", expr, err)
		}
		if out.String() != want {
			t.Errorf("--jq %s: got %q, want %q", expr, out.String(), want)
		}
	}
}

func TestJQRefusesOtherFormatsAndBadExpressions(t *testing.T) {
	for _, args := range [][]string{{"-o", "yaml", "--jq", "."}, {"-o", "table", "--jq", "."}, {"--jq", ".["}, {"--jq", ""}} {
		_, err := jqFormat(t, args...)
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--jq") {
			t.Errorf("%v: want a usage error naming --jq, got %v", args, err)
		}
	}
	if format, err := jqFormat(t, "-o", "json", "--jq", "."); err != nil || !cmdutil.IsJSON(format) {
		t.Errorf("-o json --jq . = %q, %v", format, err)
	}
	if format, err := jqFormat(t, "-o", "yaml"); err != nil || cmdutil.IsJSON(format) || format != cmdutil.FormatYAML {
		t.Errorf("-o yaml = %q, %v", format, err)
	}
}

func TestTableHeaderHonoursNoHeaders(t *testing.T) {
	for _, noHeaders := range []bool{false, true} {
		ios, _, out, _ := iostreams.Test()
		ios.SetNoHeaders(noHeaders)
		tw := cmdutil.NewTable(ios.Out)
		tw.Header(ios, "NAME", "VALUE")
		tw.Row("a", "1")
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		want := "NAME  VALUE\na     1\n"
		if noHeaders {
			want = "a  1\n"
		}
		if out.String() != want {
			t.Errorf("no headers %v: got %q, want %q", noHeaders, out.String(), want)
		}
	}
}
